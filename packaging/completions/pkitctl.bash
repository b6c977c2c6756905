# bash completion for pkitctl(1). Installed as
# share/bash-completion/completions/pkitctl, or source it from ~/.bashrc.
#
# Completes commands, options and their values, service names from the running pkitd
# (`pkitctl --json status`, 1 s timeout) over the socket given on the command line
# (--socket PATH or --socket=PATH), else $PKIT_SOCKET, else the default, and signal
# names after `signal NAME`. Without an answer from pkitd, names are not completed.

_pkitctl_signals="HUP INT QUIT KILL USR1 USR2 TERM CONT STOP TSTP TTIN TTOU WINCH ALRM PIPE ABRT"
_pkitctl_event_types="started ready exited restarting storm_pause liveness_kill health stopped gave_up restarts_exhausted group_failed escalated reload missed paused resumed log_error"

# The service names pkitd knows, one a line.
_pkitctl_services() {
    local socket_opt=() i
    for ((i = 1; i < ${#COMP_WORDS[@]} - 1; i++)); do
        case ${COMP_WORDS[i]} in
            --socket)
                # bash splits "--socket=PATH" at "=" into three words.
                if [[ ${COMP_WORDS[i + 1]} == = ]]; then
                    socket_opt=(--socket "${COMP_WORDS[i + 2]}")
                else
                    socket_opt=(--socket "${COMP_WORDS[i + 1]}")
                fi
                ;;
            --socket=*) socket_opt=("${COMP_WORDS[i]}") ;;
        esac
    done
    # Service names are [A-Za-z0-9_.-]: a plain match on "name":"..." is exact.
    "${COMP_WORDS[0]}" "${socket_opt[@]}" --timeout 1 --json status 2>/dev/null |
        grep -o '"name":"[A-Za-z0-9_.-]*"' | cut -d'"' -f4
}

_pkitctl() {
    local cur prev words cword
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD - 1]}
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
    # "--socket=PATH" as bash splits it: the value after "=".
    if [[ $prev == = && $COMP_CWORD -ge 2 ]]; then
        prev=${COMP_WORDS[COMP_CWORD - 2]}
    elif [[ $cur == = ]]; then
        cur=""
    elif [[ $cur == --*=* ]]; then
        prev=${cur%%=*}
        cur=${cur#*=}
    fi

    local commands="status top show health start stop restart pause resume wait signal logs events explain reload scale rotate shutdown check upgrade"
    local global_opts="--socket --json --timeout --color --help --version"

    # The options that take a value.
    case $prev in
        --socket)
            mapfile -t COMPREPLY < <(compgen -f -- "$cur")
            return
            ;;
        --timeout | -n | --lines | --within | --since | --interval)
            return
            ;;
        --state)
            mapfile -t COMPREPLY < <(compgen -W "waiting starting running stopping backoff storm_pause stopped done failed scheduled paused" -- "$cur")
            return
            ;;
        --color)
            mapfile -t COMPREPLY < <(compgen -W "auto always never" -- "$cur")
            return
            ;;
        --for)
            mapfile -t COMPREPLY < <(compgen -W "ready done stopped" -- "$cur")
            return
            ;;
        --stream)
            mapfile -t COMPREPLY < <(compgen -W "stdout stderr" -- "$cur")
            return
            ;;
        --type)
            mapfile -t COMPREPLY < <(compgen -W "$_pkitctl_event_types" -- "$cur")
            return
            ;;
        --service)
            mapfile -t COMPREPLY < <(compgen -W "$(_pkitctl_services)" -- "$cur")
            return
            ;;
    esac

    # The subcommand: the first word that is neither an option nor an option's value.
    local command="" i names=0
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
            --socket | --timeout | --color)
                ((i++))
                [[ ${words[i]} == = ]] && ((i++))
                ;;
            -* | =) ;;
            *)
                command=${words[i]}
                break
                ;;
        esac
    done

    if [[ -z $command ]]; then
        if [[ $cur == -* ]]; then
            mapfile -t COMPREPLY < <(compgen -W "$global_opts" -- "$cur")
        else
            mapfile -t COMPREPLY < <(compgen -W "$commands" -- "$cur")
        fi
        return
    fi

    # The names given after the command so far (options and their values skipped).
    local k
    for ((k = i + 1; k < cword; k++)); do
        case ${words[k]} in
            -n | --lines | --stream | --for | --within | --since | --service | --type | \
                --socket | --timeout | --color | --state | --interval) ((k++)) ;;
            -* | =) ;;
            *) ((names++)) ;;
        esac
    done

    local opts=""
    case $command in
        status) opts="--tree --resources --state" ;;
        top) opts="--interval" ;;
        start | pause | resume) opts="--all" ;;
        stop | restart) opts="--all --no-block" ;;
        wait) opts="--all --for --within" ;;
        signal) opts="--group" ;;
        logs) opts="-n --lines --previous -f --follow --stream -t --timestamps --since" ;;
        events) opts="--service --type" ;;
        upgrade) opts="--binary" ;;
        reload) opts="--dry-run --no-wait" ;;
        check)
            if [[ $cur != -* ]]; then
                mapfile -t COMPREPLY < <(compgen -d -- "$cur")
                return
            fi
            ;;
        show | health | explain | shutdown | rotate) ;;
        *) return ;;
    esac
    if [[ $cur == -* ]]; then
        mapfile -t COMPREPLY < <(compgen -W "$opts $global_opts" -- "$cur")
        return
    fi

    case $command in
        status | show | start | stop | restart | pause | resume | wait | explain | logs | rotate)
            mapfile -t COMPREPLY < <(compgen -W "$(_pkitctl_services)" -- "$cur")
            ;;
        signal)
            # Services first; after one, the signal (a service name still fits).
            local offer
            offer=$(_pkitctl_services)
            if ((names > 0)); then
                local s sigs=""
                for s in $_pkitctl_signals; do sigs+=" SIG$s $s"; done
                offer+=" $sigs"
            fi
            mapfile -t COMPREPLY < <(compgen -W "$offer" -- "$cur")
            ;;
    esac
}

complete -F _pkitctl pkitctl
