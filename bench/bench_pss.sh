#!/bin/bash
# PSS of pkitd with N `sleep 1000` services, each build alternating, ROUNDS
# rounds: from smaps_rollup once all N children exist, and the largest mappings; then
# again after a `pkitctl status` of all N (PKITCTL, default build/ctl/pkitctl beside
# this script's tree), which brings in the code and buffers of a request. Run it
# with nothing else of pkit's running: PSS splits a file's pages among the processes
# that map it, so a second pkitd (or bench_scale, which maps libstdc++ itself) makes
# the figure smaller than pkitd alone in a container. Prints figures; never fails.
#
#   bench/bench_pss.sh N ROUNDS NAME=PKITD...
#   e.g. bench/bench_pss.sh 1000 3 before=/tmp/pkitd-main after=build/daemon/pkitd
set -u
if [ $# -lt 3 ]; then
    echo "usage: bench_pss.sh N ROUNDS NAME=PKITD..." >&2
    exit 0
fi
n=$1
rounds=$2
shift 2
pkitctl=${PKITCTL:-$(dirname "$0")/../build/ctl/pkitctl}
tree=$(mktemp -d /tmp/pkit-bench-pss.XXXXXX)
trap 'rm -rf "$tree"' EXIT
mkdir "$tree/services"
for i in $(seq 1 "$n"); do
    echo 'command = ["/bin/sleep", "1000"]' >"$tree/services/s$i.toml"
done

# "TOTAL ANON FILE" of process $1, in kB.
pss() {
    awk '/^Pss:/ {t=$2} /^Pss_Anon:/ {a=$2} /^Pss_File:/ {f=$2} END {print t, a, f}' \
        /proc/$1/smaps_rollup
}

# One pkitd: "TOTAL ANON FILE AFTER_STATUS" in kB, and its five largest mappings on
# stderr.
one() {
    local binary=$1
    "$binary" --config "$tree" --socket "$tree/sock" >/dev/null 2>"$tree/stderr" &
    local pid=$! count=0
    for _ in $(seq 600); do
        count=$(cat /proc/$pid/task/*/children 2>/dev/null | wc -w)
        [ "$count" -ge "$n" ] && break
        sleep 0.1
    done
    sleep 2
    if [ "$count" -ge "$n" ]; then
        local figures after=nan
        figures=$(pss $pid)
        if [ -x "$pkitctl" ]; then
            "$pkitctl" --socket "$tree/sock" status >/dev/null 2>&1
            sleep 1
            after=$(pss $pid | cut -d' ' -f1)
        fi
        echo "$figures $after"
        awk '/^[0-9a-f]+-[0-9a-f]+ / {name = (NF >= 6 ? $6 : "[anon]")}
             /^Pss:/ {pss[name] += $2}
             END {for (m in pss) print pss[m], m}' /proc/$pid/smaps | sort -rn | head -5 |
            sed 's/^/    /' >&2
    else
        echo "nan nan nan nan"
        head -3 "$tree/stderr" | sed "s/^/    /" >&2
    fi
    kill -TERM $pid
    wait $pid 2>/dev/null
}

declare -A totals afters
for r in $(seq 1 "$rounds"); do
    for build in "$@"; do
        name=${build%%=*}
        one "${build#*=}" >"$tree/figures"  # not < <(...): the next start waits for this stop
        read -r total anon file after <"$tree/figures"
        echo "round $r $name: Pss $total kB (anon $anon, file $file); after a status $after kB"
        totals[$name]+="$total "
        afters[$name]+="$after "
    done
done
median() {
    echo "$1" | tr ' ' '\n' | grep -v '^$' | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'
}
mib() {
    awk -v k="$1" 'BEGIN {printf "%.2f", k / 1024}'
}
for build in "$@"; do
    name=${build%%=*}
    idle=$(median "${totals[$name]}")
    after=$(median "${afters[$name]}")
    echo "$name: median Pss $idle kB ($(mib "$idle") MiB) with $n services; after a status $after kB ($(mib "$after") MiB)"
done
