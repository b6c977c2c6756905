#compdef pkitctl
# zsh completion for pkitctl(1). Installed as share/zsh/site-functions/_pkitctl (a
# directory in $fpath), or `source` it after compinit.
#
# Completes commands, options and their values, service names from the running pkitd
# (`pkitctl --json status`, 1 s timeout) over the socket given on the command line
# (--socket PATH or --socket=PATH), else $PKIT_SOCKET, else the default, and signal
# names after `signal NAME`. Without an answer from pkitd, names are not completed.
# It uses compadd and _files only, so a script can call it with `words` and `CURRENT`.

# The service names pkitd knows, in the array `reply`.
_pkitctl_services() {
    local -a socket_opt
    local i
    for (( i = 2; i < CURRENT; i++ )); do
        case ${words[i]} in
            --socket) socket_opt=(--socket "${words[i+1]}") ;;
            --socket=*) socket_opt=("${words[i]}") ;;
        esac
    done
    # Service names are [A-Za-z0-9_.-]: a plain match on "name":"..." is exact.
    reply=(${(f)"$("${words[1]}" "${socket_opt[@]}" --timeout 1 --json status 2>/dev/null |
        grep -o '"name":"[A-Za-z0-9_.-]*"' | cut -d'"' -f4)"})
}

_pkitctl() {
    local cur=${words[CURRENT]} prev=${words[CURRENT-1]}
    local -a commands global_opts signals event_types reply
    commands=(status show health start stop restart wait signal logs events explain reload scale
              shutdown check)
    global_opts=(--socket --json --timeout --color --help --version)
    signals=(HUP INT QUIT KILL USR1 USR2 TERM CONT STOP TSTP TTIN TTOU WINCH ALRM PIPE ABRT)
    event_types=(started ready exited restarting storm_pause liveness_kill health stopped
                 gave_up restarts_exhausted group_failed escalated reload)

    # "--option=value": complete the value after the "=".
    if [[ $cur == --*=* ]]; then
        compset -P '*='
        prev=${cur%%=*}
        cur=${cur#*=}
    fi

    case $prev in
        --socket) _files; return ;;
        --timeout|-n|--lines|--within|--since) return 1 ;;
        --color) compadd -- auto always never; return ;;
        --for) compadd -- ready done stopped; return ;;
        --stream) compadd -- stdout stderr; return ;;
        --type) compadd -- $event_types; return ;;
        --service) _pkitctl_services; compadd -- $reply; return ;;
    esac

    # The command: the first word that is neither an option nor an option's value.
    local command="" i names=0
    for (( i = 2; i < CURRENT; i++ )); do
        case ${words[i]} in
            --socket|--timeout|--color) (( i++ )) ;;
            -*) ;;
            *) command=${words[i]}; break ;;
        esac
    done
    if [[ -z $command ]]; then
        if [[ $cur == -* ]]; then
            compadd -- $global_opts
        else
            compadd -- $commands
        fi
        return
    fi
    local k
    for (( k = i + 1; k < CURRENT; k++ )); do
        case ${words[k]} in
            -n|--lines|--stream|--for|--within|--since|--service|--type|--socket|--timeout|--color)
                (( k++ )) ;;
            -*) ;;
            *) (( names++ )) ;;
        esac
    done

    local -a opts
    case $command in
        status) opts=(--tree --resources) ;;
        start) opts=(--all) ;;
        stop|restart) opts=(--all --no-block) ;;
        wait) opts=(--all --for --within) ;;
        signal) opts=(--group) ;;
        logs) opts=(-n --lines --previous -f --follow --stream -t --timestamps --since) ;;
        events) opts=(--service --type) ;;
        check) [[ $cur != -* ]] && { _files -/; return } ;;
        show|health|explain|reload|shutdown) ;;
        *) return 1 ;;
    esac
    if [[ $cur == -* ]]; then
        compadd -- $opts $global_opts
        return
    fi
    case $command in
        status|show|start|stop|restart|wait|explain|logs)
            _pkitctl_services
            compadd -- $reply
            ;;
        signal)
            # Services first; after one, the signal (a service name still fits).
            _pkitctl_services
            if (( names > 0 )); then
                compadd -- $reply SIG${^signals} $signals
            else
                compadd -- $reply
            fi
            ;;
    esac
}

# Loaded by compinit from $fpath: this file is the function's body, so run it. Sourced
# (or read by a test): define the functions only, and register them when compdef exists.
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
    _pkitctl "$@"
elif (( $+functions[compdef] )); then
    compdef _pkitctl pkitctl
fi
