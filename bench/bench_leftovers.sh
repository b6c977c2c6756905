#!/bin/bash
# A shutdown where every service leaves a process behind: N services, each a `sleep`
# with a child that ignores SIGTERM in its process group, so that each main process's
# exit leaves a group for pkitd to clean up (SIGKILL after stop.timeout, 3 s here).
# Prints, for each pkitd given, the time from SIGTERM until pkitd has exited and the CPU
# pkitd used meanwhile. Goal: about the 3 s timeout plus the kernel's time to end the
# processes, and pkitd's CPU linear in N. Prints figures; never fails.
#
#   bench/bench_leftovers.sh N ROUNDS NAME=PKITD...
#   e.g. bench/bench_leftovers.sh 3000 2 now=build/daemon/pkitd
set -u
if [ $# -lt 3 ]; then
    echo "usage: bench_leftovers.sh N ROUNDS NAME=PKITD..." >&2
    exit 0
fi
n=$1
rounds=$2
shift 2
tree=$(mktemp -d /tmp/pkit-bench-leftovers.XXXXXX)
trap 'rm -rf "$tree"' EXIT
mkdir "$tree/services"
for i in $(seq 1 "$n"); do
    printf '%s\n' \
        'command = ["/bin/sh", "-c", "(trap \"\" TERM; exec sleep 100000) & exec sleep 100000"]' \
        '[stop]' 'timeout = "3s"' >"$tree/services/s$i.toml"
done
ulimit -n "$(ulimit -Hn)"

# CPU ticks (utime + stime) of process $1.
ticks() {
    awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null
}

for round in $(seq 1 "$rounds"); do
    for named in "$@"; do
        name=${named%%=*}
        pkitd=${named#*=}
        rm -f "$tree/s.sock"
        "$pkitd" --config "$tree" --socket "$tree/s.sock" >/dev/null 2>&1 &
        pid=$!
        # Every service and its child running: 2N sleeps under pkitd.
        for _ in $(seq 1 600); do
            count=$(pgrep -c -P "$pid" -x sleep)
            [ "$count" -ge "$n" ] && break
            sleep 0.1
        done
        sleep 1
        before=$(ticks "$pid")
        last=$before
        start=$(date +%s%N)
        kill -TERM "$pid"
        while kill -0 "$pid" 2>/dev/null; do
            now=$(ticks "$pid")
            [ -n "$now" ] && last=$now
            sleep 0.05
        done
        end=$(date +%s%N)
        wait "$pid" 2>/dev/null
        echo "round $round $name: $n services, SIGTERM until exit $(((end - start) / 1000000)) ms," \
            "pkitd CPU $(((last - before) * 10)) ms"
    done
done
