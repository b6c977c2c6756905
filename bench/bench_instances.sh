#!/bin/bash
# One file with `instances = N` against N separate files (SPEC §13), side by side, in
# alternating rounds with the same pkitd: the start-up time (from pkitd's start until
# N children exist), the latency of `pkitctl status` over all N (median of STATUS
# calls), and pkitd's PSS once all N run. Run it with nothing else of pkit's running
# (see bench_pss.sh on PSS). Prints figures; never fails.
#
#   bench/bench_instances.sh N ROUNDS [STATUS] [PKITD]
#   e.g. bench/bench_instances.sh 1000 5 20 build/daemon/pkitd
set -u
if [ $# -lt 2 ]; then
    echo "usage: bench_instances.sh N ROUNDS [STATUS] [PKITD]" >&2
    exit 0
fi
n=$1
rounds=$2
calls=${3:-20}
here=$(dirname "$0")
pkitd=${4:-$here/../build/daemon/pkitd}
pkitctl=${PKITCTL:-$here/../build/ctl/pkitctl}
root=$(mktemp -d /tmp/pkit-bench-instances.XXXXXX)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/files/services" "$root/instances/services"
for i in $(seq 1 "$n"); do
    echo 'command = ["/bin/sleep", "1000"]' >"$root/files/services/s$i.toml"
done
printf 'command = ["/bin/sleep", "1000"]\ninstances = %s\n' "$n" >"$root/instances/services/s.toml"

now() { date +%s.%N; }

# One pkitd on tree $1: "STARTUP_S STATUS_MS PSS_KB" on stdout.
one() {
    local tree=$1 start pid count=0 ready=nan
    start=$(now)
    "$pkitd" --config "$tree" --socket "$tree/sock" >/dev/null 2>"$tree/stderr" &
    pid=$!
    for _ in $(seq 6000); do
        count=$(cat /proc/$pid/task/*/children 2>/dev/null | wc -w)
        if [ "$count" -ge "$n" ]; then
            ready=$(awk -v a="$start" -v b="$(now)" 'BEGIN {printf "%.3f", b - a}')
            break
        fi
        sleep 0.01
    done
    sleep 1
    local times=() t0 t1
    for _ in $(seq "$calls"); do
        t0=$(now)
        "$pkitctl" --socket "$tree/sock" status >/dev/null 2>&1
        t1=$(now)
        times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", (b - a) * 1000}')")
    done
    local status pss
    status=$(printf '%s\n' "${times[@]}" | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')
    pss=$(awk '/^Pss:/ {print $2}' /proc/$pid/smaps_rollup)
    kill -TERM $pid
    wait $pid 2>/dev/null
    echo "$ready $status $pss"
}

median() {
    echo "$1" | tr ' ' '\n' | grep -v '^$' | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'
}

declare -A startups statuses psses
for r in $(seq 1 "$rounds"); do
    for kind in files instances; do
        one "$root/$kind" >"$root/figures"
        read -r startup status pss <"$root/figures"
        echo "round $r $kind: start-up $startup s, status $status ms, Pss $pss kB"
        startups[$kind]+="$startup "
        statuses[$kind]+="$status "
        psses[$kind]+="$pss "
    done
done
for kind in files instances; do
    echo "$kind ($n services): median start-up $(median "${startups[$kind]}") s," \
        "status $(median "${statuses[$kind]}") ms, Pss $(median "${psses[$kind]}") kB"
done
ratio() {
    awk -v a="$(median "$1")" -v b="$(median "$2")" 'BEGIN {printf "%.2f", (a > 0 ? b / a : 0)}'
}
echo "instances / files: start-up $(ratio "${startups[files]}" "${startups[instances]}")," \
    "status $(ratio "${statuses[files]}" "${statuses[instances]}")," \
    "Pss $(ratio "${psses[files]}" "${psses[instances]}")"
