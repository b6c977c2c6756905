#!/bin/bash
# PSS of pkitd with N `sleep 1000` services (issue 14), each build alternating, ROUNDS
# rounds: from smaps_rollup once all N children exist, and the largest mappings. Run it
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
tree=$(mktemp -d /tmp/pkit-bench-pss.XXXXXX)
trap 'rm -rf "$tree"' EXIT
mkdir "$tree/services"
for i in $(seq 1 "$n"); do
    echo 'command = ["/bin/sleep", "1000"]' >"$tree/services/s$i.toml"
done

# One pkitd: "TOTAL ANON FILE" in kB, and its five largest mappings on stderr.
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
        awk '/^Pss:/ {t=$2} /^Pss_Anon:/ {a=$2} /^Pss_File:/ {f=$2} END {print t, a, f}' \
            /proc/$pid/smaps_rollup
        awk '/^[0-9a-f]+-[0-9a-f]+ / {name = (NF >= 6 ? $6 : "[anon]")}
             /^Pss:/ {pss[name] += $2}
             END {for (m in pss) print pss[m], m}' /proc/$pid/smaps | sort -rn | head -5 |
            sed 's/^/    /' >&2
    else
        echo "nan nan nan"
        head -3 "$tree/stderr" | sed "s/^/    /" >&2
    fi
    kill -TERM $pid
    wait $pid 2>/dev/null
}

declare -A totals
for r in $(seq 1 "$rounds"); do
    for build in "$@"; do
        name=${build%%=*}
        one "${build#*=}" >"$tree/figures"  # not < <(...): the next start waits for this stop
        read -r total anon file <"$tree/figures"
        echo "round $r $name: Pss $total kB (anon $anon, file $file)"
        totals[$name]+="$total "
    done
done
for build in "$@"; do
    name=${build%%=*}
    median=$(echo "${totals[$name]}" | tr ' ' '\n' | grep -v '^$' | sort -n |
        awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')
    echo "$name: median Pss $median kB ($(awk -v k="$median" 'BEGIN {printf "%.2f", k / 1024}') MiB) with $n services"
done
