#!/bin/sh
# cgroups' cost, side by side (SPEC §15): bench_restart and bench_scale alternately with
# pkitd in a delegated cgroup of its own (cgroups = "auto" takes it: every service in a
# cgroup, clone3 into it, cgroup.events read at each exit) and without (the bench's own
# cgroup, not delegated: no cgroups). Needs root and a writable cgroup v2 hierarchy;
# prints nothing but the benches' own tables, one per round, each headed "on" or "off".
#
#   bench/bench_cgroups.sh BUILD_DIR [ROUNDS]
set -eu
build=$1
rounds=${2:-3}
cg_parent=$(awk '{ for (i = 7; i < NF; i++) if ($i == "-") { if ($(i + 1) == "cgroup2" && $4 == "/") { print $5; exit } break } }' /proc/self/mountinfo)
self=$(sed -n 's/^0:://p' /proc/self/cgroup)
[ -n "$cg_parent" ] || { echo "bench_cgroups: no cgroup2 mount" >&2; exit 77; }
[ "$self" = / ] || cg_parent=$cg_parent$self

# Runs "$@" in a fresh delegated cgroup (on) or as it is (off).
in_mode() {
    mode=$1
    shift
    if [ "$mode" = off ]; then
        "$@"
        return
    fi
    cg=$cg_parent/pkit-bench-$$
    mkdir "$cg"
    python3 -c "import os, sys; os.setxattr(sys.argv[1], 'trusted.delegate', b'1')" "$cg"
    sh -c 'echo $$ > "$0/cgroup.procs"; shift; exec "$@"' "$cg" - "$@" || true
    echo 1 >"$cg/cgroup.kill" 2>/dev/null || true
    sleep 0.3
    find "$cg" -depth -type d -exec rmdir {} \; 2>/dev/null || true
}

i=0
while [ "$i" -lt "$rounds" ]; do
    for mode in on off; do
        echo "== cgroups $mode, round $((i + 1))"
        in_mode "$mode" "$build/bench/bench_restart" --pkitd "$build/daemon/pkitd" --rounds 1 \
            --seconds 2
        in_mode "$mode" "$build/bench/bench_scale" --pkitd "$build/daemon/pkitd" \
            --pkitctl "$build/ctl/pkitctl" --services 1000 --rounds 1 --calls 20
    done
    i=$((i + 1))
done
