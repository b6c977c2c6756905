#!/usr/bin/env bash
# pkitd's CPU time per 1,000 liveness probes, by kind (exec and tcp).
#   bench/bench_probes.sh [BUILD_DIR]     (default: ../build relative to this script)
# Ten services each probed every 100 ms (about 100 probes a second); pkitd's
# utime+stime from /proc over a measured window, divided by the probes in that window.
# Probes are not counted one by one (status does not expose a count): the figure uses
# services x window / interval, an upper bound (the next probe starts an interval after
# the previous result), so the cost per probe printed is a slight underestimate.
# Prints figures; never fails on timing.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
pkitd=$build/daemon/pkitd
[ -x "$pkitd" ] || { echo "no pkitd at $pkitd"; exit 0; }
tick=$(getconf CLK_TCK)
services=10 interval_ms=100 window_s=${BENCH_PROBE_WINDOW:-10}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

measure() {  # kind, probe table body
    local kind=$1 body=$2 dir
    dir=$(mktemp -d /tmp/pkit-bench-probes.XXXXXX)
    mkdir -p "$dir/services"
    for i in $(seq "$services"); do
        printf 'command = ["/bin/sleep", "1000"]\n[output]\nforward = "none"\n[health]\n%s\ninterval = "%sms"\n' \
            "$body" "$interval_ms" > "$dir/services/p$i.toml"
    done
    "$pkitd" --config "$dir" --socket "$dir/pkitd.sock" 2>"$dir/log" >/dev/null &
    local pid=$!
    sleep 2
    local before after
    before=$(cpu_ticks "$pid")
    sleep "$window_s"
    after=$(cpu_ticks "$pid")
    kill -TERM "$pid"; wait "$pid" 2>/dev/null
    local probes=$(( services * window_s * 1000 / interval_ms ))
    awk -v t=$((after - before)) -v hz="$tick" -v n="$probes" -v k="$kind" \
        'BEGIN { printf "  %-5s probes: %d in %ss, pkitd CPU %.0f ms, %.1f ms per 1,000 probes\n", k, n, '"$window_s"', t*1000/hz, t*1000/hz*1000/n }'
    rm -rf "$dir"
}

echo "== pkitd CPU time per 1,000 liveness probes ($services services, every ${interval_ms} ms, ${window_s} s)"
measure exec 'exec = ["/bin/true"]'
if command -v socat >/dev/null; then
    port=39$((RANDOM % 900 + 100))
    socat TCP-LISTEN:$port,fork,reuseaddr,bind=127.0.0.1 /dev/null & lst=$!
    measure tcp "tcp = \"127.0.0.1:$port\""
    kill "$lst" 2>/dev/null
else
    echo "  tcp: skipped (socat missing)"
fi
exit 0
