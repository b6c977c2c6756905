#!/bin/bash
# Memory after churn (issue 44): pkitd's RSS after each of CYCLES cycles of N services
# added and removed again, in two ways, each on a pkitd of its own:
#   scale   `pkitctl scale w N` then `pkitctl scale w 1` (one file, `instances`)
#   reload  N files written and `pkitctl reload`, then removed and `pkitctl reload`
# Each step waits until pkitd has exactly the children it should (N, then 1). RSS is
# read once the cycle's services have exited (VmRSS, and the heap malloc holds as
# /proc/PID/smaps' [heap] Rss). Prints the RSS after the first cycle, after the last,
# and the growth between them; the goal is at most 10 %. Prints figures; never fails.
#
#   bench/bench_churn.sh [N] [CYCLES] [PKITD] [PKITCTL]
#   e.g. bench/bench_churn.sh 1000 30 build/daemon/pkitd build/ctl/pkitctl
# KINDS=reload (or scale) runs one of the two only.
set -u
n=${1:-1000}
cycles=${2:-30}
here=$(dirname "$0")
pkitd=${3:-$here/../build/daemon/pkitd}
pkitctl=${4:-$here/../build/ctl/pkitctl}
root=$(mktemp -d /tmp/pkit-bench-churn.XXXXXX)
pid=
cleanup() {
    if [ -n "$pid" ]; then
        kill -TERM "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    fi
    rm -rf "$root"
}
trap cleanup EXIT

children() {
    cat /proc/"$pid"/task/*/children 2>/dev/null | wc -w
}

# Waits (up to 120 s) until pkitd has $1 children; false if it never does.
wait_children() {
    for _ in $(seq 12000); do
        [ "$(children)" -eq "$1" ] && return 0
        sleep 0.01
    done
    echo "pkitd has $(children) children, not $1" >&2
    return 1
}

rss_kb() {
    awk '/^VmRSS:/ {print $2}' /proc/"$pid"/status
}

# Service slots so far: SOCKET.runs holds a 32-byte record a slot.
slots() {
    echo $(($(stat -c %s "$1/sock.runs" 2>/dev/null || echo 0) / 32))
}

heap_kb() {
    awk '/\[heap\]/ {h = 1; next} /^[0-9a-f]+-/ {h = 0} h && /^Rss:/ {print $2}' /proc/"$pid"/smaps
}

# One pkitd on tree $1 for churn kind $2: one line a cycle, then the summary.
run() {
    local tree=$1 kind=$2 first= last= cycle
    "$pkitd" --config "$tree" --socket "$tree/sock" >/dev/null 2>"$tree/stderr" &
    pid=$!
    if [ "$kind" = scale ]; then
        wait_children 2 || return
        "$pkitctl" --socket "$tree/sock" scale w 1 >/dev/null || return
    fi
    wait_children 1 || return
    echo "$kind: start: RSS $(rss_kb) kB, heap $(heap_kb) kB"
    for cycle in $(seq "$cycles"); do
        if [ "$kind" = scale ]; then
            "$pkitctl" --socket "$tree/sock" scale w "$n" >/dev/null || return
        else
            for i in $(seq 2 "$n"); do
                echo 'command = ["/bin/sleep", "1000"]' >"$tree/services/f$i.toml"
            done
            "$pkitctl" --socket "$tree/sock" reload >/dev/null || return
        fi
        wait_children "$n" || return
        if [ "$kind" = scale ]; then
            "$pkitctl" --socket "$tree/sock" scale w 1 >/dev/null || return
        else
            rm -f "$tree"/services/f*.toml
            echo 'command = ["/bin/sleep", "1000"]' >"$tree/services/f1.toml"
            "$pkitctl" --socket "$tree/sock" reload >/dev/null || return
        fi
        wait_children 1 || return
        # The removed services' exits are in; a turn or two for their pipes' ends.
        sleep 0.2
        last=$(rss_kb)
        [ -z "$first" ] && first=$last
        echo "$kind: cycle $cycle: RSS $last kB, heap $(heap_kb) kB, slots $(slots "$tree")"
    done
    awk -v k="$kind" -v a="$first" -v b="$last" -v c="$cycles" 'BEGIN {
        printf "%s: RSS after cycle 1: %d kB, after cycle %d: %d kB, growth %.1f %% (goal <= 10 %%)\n",
            k, a, c, b, (b - a) * 100.0 / a }'
    kill -TERM "$pid"
    wait "$pid" 2>/dev/null
    pid=
}

for kind in ${KINDS:-scale reload}; do
    mkdir -p "$root/$kind/services"
    if [ "$kind" = scale ]; then
        # Two, so that `scale` takes it; scaled to 1 before the first cycle.
        printf 'command = ["/bin/sleep", "1000"]\ninstances = 2\n' >"$root/$kind/services/w.toml"
    else
        echo 'command = ["/bin/sleep", "1000"]' >"$root/$kind/services/f1.toml"
    fi
    run "$root/$kind" "$kind"
done
