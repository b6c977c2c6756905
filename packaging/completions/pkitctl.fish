# fish completion for pkitctl(1). Installed as
# share/fish/vendor_completions.d/pkitctl.fish, loaded by fish on demand.
#
# Completes commands, options and their values, service names from the running pkitd
# (`pkitctl --json status`, 1 s timeout) over the socket given on the command line
# (--socket PATH or --socket=PATH), else $PKIT_SOCKET, else the default, and signal
# names after `signal NAME`. Without an answer from pkitd, names are not completed.

# The service names pkitd knows, one a line.
function __pkitctl_services
    set -l words (commandline -opc)
    set -l socket_opt
    set -l i 2
    while test $i -le (count $words)
        switch $words[$i]
            case --socket
                set -l next (math $i + 1)
                if test $next -le (count $words)
                    set socket_opt --socket $words[$next]
                end
            case '--socket=*'
                set socket_opt $words[$i]
        end
        set i (math $i + 1)
    end
    # Service names are [A-Za-z0-9_.-]: a plain match on "name":"..." is exact.
    command $words[1] $socket_opt --timeout 1 --json status 2>/dev/null |
        string match -ar '"name":"[A-Za-z0-9_.-]*"' | string replace -r '"name":"(.*)"' '$1'
end

# The command given so far (the first word that is neither an option nor its value).
function __pkitctl_command
    set -l words (commandline -opc)
    set -l skip 0
    for w in $words[2..-1]
        if test $skip = 1
            set skip 0
            continue
        end
        switch $w
            case --socket --timeout --color
                set skip 1
            case '-*'
            case '*'
                echo $w
                return 0
        end
    end
    return 1
end

# True when the command is one of the arguments.
function __pkitctl_using
    set -l command (__pkitctl_command); or return 1
    contains -- $command $argv
end

# True after `signal` and at least one name.
function __pkitctl_signal_after_name
    set -l words (commandline -opc)
    set -l seen 0
    set -l names 0
    for w in $words[2..-1]
        if test $seen = 1
            switch $w
                case '-*'
                case '*'
                    set names (math $names + 1)
            end
        else if test $w = signal
            set seen 1
        end
    end
    test $names -gt 0
end

complete -c pkitctl -f
complete -c pkitctl -n "not __pkitctl_command" -a status -d "show the services' state"
complete -c pkitctl -n "not __pkitctl_command" -a top -d 'a live full-screen view, sorted by CPU'
complete -c pkitctl -n "not __pkitctl_command" -a show -d 'one screen about one service'
complete -c pkitctl -n "not __pkitctl_command" -a health -d "pkitd's own readiness"
complete -c pkitctl -n "not __pkitctl_command" -a start -d 'start stopped services'
complete -c pkitctl -n "not __pkitctl_command" -a stop -d 'stop services'
complete -c pkitctl -n "not __pkitctl_command" -a restart -d 'restart services with fresh runs'
complete -c pkitctl -n "not __pkitctl_command" -a pause -d "freeze services' runs (cgroups)"
complete -c pkitctl -n "not __pkitctl_command" -a resume -d 'thaw paused services'
complete -c pkitctl -n "not __pkitctl_command" -a wait -d 'block until services are ready, done or stopped'
complete -c pkitctl -n "not __pkitctl_command" -a signal -d 'send a signal to services'
complete -c pkitctl -n "not __pkitctl_command" -a logs -d "show services' captured output"
complete -c pkitctl -n "not __pkitctl_command" -a events -d 'print supervision events'
complete -c pkitctl -n "not __pkitctl_command" -a explain -d 'say why a service is in its state'
complete -c pkitctl -n "not __pkitctl_command" -a reload -d 're-read the configuration'
complete -c pkitctl -n "not __pkitctl_command" -a scale -d 'start or stop instances of a service defined with instances > 1'
complete -c pkitctl -n "not __pkitctl_command" -a rotate -d 'rotate log files now: PATH to PATH.1, a new PATH'
complete -c pkitctl -n "not __pkitctl_command" -a shutdown -d 'stop every service, then pkitd'
complete -c pkitctl -n "not __pkitctl_command" -a check -d 'validate a configuration tree offline'
complete -c pkitctl -n "not __pkitctl_command" -a upgrade -d 'replace pkitd with a new binary, keeping every service'

# Global options.
complete -c pkitctl -l socket -r -F -d 'control socket'
complete -c pkitctl -l json -d 'print the protocol result as JSON'
complete -c pkitctl -l timeout -x -d 'how long to wait for a reply'
complete -c pkitctl -l color -x -a 'auto always never' -d 'colours in the output'
complete -c pkitctl -l help -d 'show help'
complete -c pkitctl -l version -d 'show the version'

# Service names.
complete -c pkitctl -n "__pkitctl_using status show start stop restart pause resume wait explain logs signal rotate" \
    -a "(__pkitctl_services)"
complete -c pkitctl -n "__pkitctl_using signal; and __pkitctl_signal_after_name" \
    -a "SIG{HUP,INT,QUIT,KILL,USR1,USR2,TERM,CONT,STOP,TSTP,TTIN,TTOU,WINCH,ALRM,PIPE,ABRT} HUP INT QUIT KILL USR1 USR2 TERM CONT STOP TSTP TTIN TTOU WINCH ALRM PIPE ABRT"

# Per-command options.
complete -c pkitctl -n "__pkitctl_using status" -l tree -d 'the supervision tree'
complete -c pkitctl -n "__pkitctl_using status" -l resources -d 'processes, CPU and memory'
complete -c pkitctl -n "__pkitctl_using status" -l state -x \
    -a 'waiting starting running stopping backoff storm_pause stopped done failed scheduled paused' \
    -d 'only services in these states'
complete -c pkitctl -n "__pkitctl_using top" -l interval -x -d 'how often to refresh'
complete -c pkitctl -n "__pkitctl_using start stop restart pause resume wait" -l all -d 'every service'
complete -c pkitctl -n "__pkitctl_using stop restart" -l no-block -d 'return at once'
complete -c pkitctl -n "__pkitctl_using reload" -l dry-run -d 'show what a reload would change, changing nothing'
complete -c pkitctl -n "__pkitctl_using reload" -l no-wait -d 'return before the start_first replacements are ready'
complete -c pkitctl -n "__pkitctl_using wait" -l for -x -a 'ready done stopped' -d 'the condition'
complete -c pkitctl -n "__pkitctl_using wait" -l within -x -d 'a duration'
complete -c pkitctl -n "__pkitctl_using signal" -l group -d 'the whole process group'
complete -c pkitctl -n "__pkitctl_using logs" -s n -l lines -x -d 'lines to print'
complete -c pkitctl -n "__pkitctl_using logs" -l previous -d 'the run before the latest'
complete -c pkitctl -n "__pkitctl_using logs" -s f -l follow -d 'follow new lines'
complete -c pkitctl -n "__pkitctl_using logs" -l stream -x -a 'stdout stderr' -d 'one stream only'
complete -c pkitctl -n "__pkitctl_using logs" -s t -l timestamps -d 'time stamps'
complete -c pkitctl -n "__pkitctl_using logs" -l since -x -d 'a duration'
complete -c pkitctl -n "__pkitctl_using events" -l service -x -a "(__pkitctl_services)" \
    -d "only this service's events"
complete -c pkitctl -n "__pkitctl_using events" -l type -x -d 'only events of this type' \
    -a 'started ready exited restarting storm_pause liveness_kill health stopped gave_up restarts_exhausted group_failed escalated reload missed paused resumed log_error'
complete -c pkitctl -n "__pkitctl_using check" -a "(__fish_complete_directories)"
complete -c pkitctl -n "__pkitctl_using upgrade" -l binary -r -F -d 'the new pkitd'
