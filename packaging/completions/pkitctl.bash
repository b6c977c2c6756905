# bash completion for pkitctl(1). Installed as
# share/bash-completion/completions/pkitctl, or source it from ~/.bashrc.
#
# Service names come from the running pkitd (`pkitctl --json status`, 1 s timeout),
# over the socket given on the command line with --socket, else $PKIT_SOCKET, else
# the default; without an answer only options are completed.

_pkitctl_services() {
    local socket_opt=() i
    for ((i = 1; i < ${#COMP_WORDS[@]} - 1; i++)); do
        if [[ ${COMP_WORDS[i]} == --socket ]]; then
            socket_opt=(--socket "${COMP_WORDS[i + 1]}")
        elif [[ ${COMP_WORDS[i]} == --socket=* ]]; then
            socket_opt=("${COMP_WORDS[i]}")
        fi
    done
    # Service names are [A-Za-z0-9_.-]: a plain match on "name":"..." is exact.
    "${COMP_WORDS[0]}" "${socket_opt[@]}" --timeout 1 --json status 2>/dev/null |
        grep -o '"name":"[A-Za-z0-9_.-]*"' | cut -d'"' -f4
}

_pkitctl() {
    local cur prev words cword
    if declare -F _init_completion >/dev/null; then
        _init_completion || return
    else
        cur=${COMP_WORDS[COMP_CWORD]}
        prev=${COMP_WORDS[COMP_CWORD - 1]}
        words=("${COMP_WORDS[@]}")
        cword=$COMP_CWORD
    fi

    local commands="status health start stop restart wait signal logs events explain reload shutdown check"
    local global_opts="--socket --json --timeout --help --version"

    # The options that take a value.
    case $prev in
        --socket)
            COMPREPLY=($(compgen -f -- "$cur"))
            return
            ;;
        --timeout | -n | --lines | --within)
            return
            ;;
        --for)
            COMPREPLY=($(compgen -W "ready done stopped" -- "$cur"))
            return
            ;;
        --stream)
            COMPREPLY=($(compgen -W "stdout stderr" -- "$cur"))
            return
            ;;
    esac

    # The subcommand: the first word that is neither an option nor an option's value.
    local command="" i
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
            --socket | --timeout) ((i++)) ;;
            -*) ;;
            *)
                command=${words[i]}
                break
                ;;
        esac
    done

    if [[ -z $command ]]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "$global_opts" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$commands" -- "$cur"))
        fi
        return
    fi

    local opts=""
    case $command in
        status) opts="--tree --resources" ;;
        start) opts="--all" ;;
        stop | restart) opts="--all --no-block" ;;
        wait) opts="--all --for --within" ;;
        signal) opts="--group" ;;
        logs) opts="-n --lines --previous -f --follow --stream" ;;
        check)
            if [[ $cur != -* ]]; then
                COMPREPLY=($(compgen -d -- "$cur"))
                return
            fi
            ;;
        events | explain | reload | shutdown) ;;
        *) return ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$opts $global_opts" -- "$cur"))
        return
    fi

    case $command in
        status | start | stop | restart | wait | explain)
            COMPREPLY=($(compgen -W "$(_pkitctl_services)" -- "$cur"))
            ;;
        logs)
            # One service only.
            local k
            for ((k = i + 1; k < cword; k++)); do
                case ${words[k]} in
                    -n | --lines | --stream) ((k++)) ;;
                    -*) ;;
                    *) return ;;
                esac
            done
            COMPREPLY=($(compgen -W "$(_pkitctl_services)" -- "$cur"))
            ;;
        signal)
            # Services, then the signal: offer both.
            COMPREPLY=($(compgen -W "$(_pkitctl_services) $(compgen -A signal)" -- "$cur"))
            ;;
    esac
}

complete -F _pkitctl pkitctl
