#compdef pkitctl
# zsh completion for pkitctl(1). Installed as share/zsh/site-functions/_pkitctl (a
# directory in $fpath), or `source` it after compinit.
#
# Completes commands, options and their values, service names from the running pkitd
# (`pkitctl --json status`, 1 s timeout) over the socket given on the command line
# (--socket PATH or --socket=PATH), else $PKIT_SOCKET, else the default, and signal
# names after `signal NAME`. Without an answer from pkitd, names are not completed.
# Commands and options are offered with their descriptions (compadd -d). It uses
# compadd and _files only, so a script can call it with `words` and `CURRENT`.

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

# Offers "WORD:description" pairs: the words, each listed with its description.
_pkitctl_describe() {
    local -a offer descs
    local pair
    for pair in "$@"; do
        offer+=("${pair%%:*}")
        descs+=("${(r:16:)${pair%%:*}} -- ${pair#*:}")
    done
    compadd -l -d descs -- "${offer[@]}"
}

_pkitctl() {
    local cur=${words[CURRENT]} prev=${words[CURRENT-1]}
    local -a commands global_opts signals event_types reply
    commands=(
        "status:show the services' state"
        "top:a live full-screen view, sorted by CPU"
        "show:one screen about one service"
        "health:pkitd's own readiness"
        "start:start stopped services"
        "stop:stop services"
        "restart:restart services with fresh runs"
        "pause:freeze services' runs (cgroups)"
        "resume:thaw paused services"
        "wait:block until services are ready, done or stopped"
        "signal:send a signal to services"
        "logs:show services' captured output"
        "events:print supervision events"
        "explain:say why a service is in its state"
        "reload:re-read the configuration"
        "scale:start or stop instances of a service defined with instances > 1"
        "rotate:rotate log files now: PATH to PATH.1, a new PATH"
        "shutdown:stop every service, then pkitd"
        "check:validate a configuration tree offline"
        "upgrade:replace pkitd with a new binary, keeping every service"
    )
    global_opts=(
        "--socket:the control socket"
        "--json:print the protocol's result as JSON"
        "--timeout:how long to wait for a reply"
        "--color:colours: auto, always or never"
        "--help:show help"
        "--version:show the version"
    )
    signals=(HUP INT QUIT KILL USR1 USR2 TERM CONT STOP TSTP TTIN TTOU WINCH ALRM PIPE ABRT)
    event_types=(started ready exited restarting storm_pause liveness_kill health stopped
                 gave_up restarts_exhausted group_failed escalated reload missed
                 paused resumed log_error)

    # "--option=value": complete the value after the "=".
    if [[ $cur == --*=* ]]; then
        compset -P '*='
        prev=${cur%%=*}
        cur=${cur#*=}
    fi

    case $prev in
        --socket) _files; return ;;
        --timeout|-n|--lines|--within|--since|--interval) return 1 ;;
        --state) compadd -- waiting starting running stopping backoff storm_pause stopped done \
                     failed scheduled paused; return ;;
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
            _pkitctl_describe $global_opts
        else
            _pkitctl_describe $commands
        fi
        return
    fi
    local k
    for (( k = i + 1; k < CURRENT; k++ )); do
        case ${words[k]} in
            -n|--lines|--stream|--for|--within|--since|--service|--type|--socket|--timeout|--color|--state|--interval)
                (( k++ )) ;;
            -*) ;;
            *) (( names++ )) ;;
        esac
    done

    local -a opts
    case $command in
        status) opts=("--tree:draw groups and their members"
                      "--resources:add processes, CPU and memory"
                      "--state:only services in these states") ;;
        top) opts=("--interval:how often to refresh") ;;
        start|pause|resume) opts=("--all:every service") ;;
        stop|restart) opts=("--all:every service" "--no-block:return at once") ;;
        wait) opts=("--all:every service" "--for:ready, done or stopped"
                    "--within:give up after this long") ;;
        signal) opts=("--group:the whole process group") ;;
        logs) opts=("-n:the last LINES lines" "--lines:the last LINES lines"
                    "--previous:the run before the latest" "-f:follow new lines"
                    "--follow:follow new lines" "--stream:stdout or stderr only"
                    "-t:each line's time" "--timestamps:each line's time"
                    "--since:only lines newer than this") ;;
        events) opts=("--service:only this service's events" "--type:only events of this type") ;;
        upgrade) opts=("--binary:the new pkitd") ;;
        reload) opts=("--dry-run:show what a reload would change, changing nothing"
                      "--no-wait:return before the start_first replacements are ready") ;;
        check) [[ $cur != -* ]] && { _files -/; return } ;;
        show|health|explain|shutdown|rotate) ;;
        *) return 1 ;;
    esac
    if [[ $cur == -* ]]; then
        _pkitctl_describe $opts $global_opts
        return
    fi
    case $command in
        status|show|start|stop|restart|pause|resume|wait|explain|logs|rotate)
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
