#!/usr/bin/env bash
# Configuration loading and reload figures.
#   bench/bench_config.sh [BUILD_DIR] [N]   (BUILD_DIR default ../build; N default 10000)
# 1. `pkitd --check` on an `after` chain of N services (each after the one before).
# 2. A real start on the same chain (autostart = false, so nothing forks): time from
#    starting pkitd to its first `ping` reply.
# 3. The loop's longest stall during a reload of 1,000 services: one client pings back
#    to back on its own connection while `reload` runs on another; the longest ping
#    round trip bounds what the reload kept the loop busy (its apply part, the read
#    being on a worker thread). Twice: 1,000 services added to a running pkitd, then a
#    reload that finds the same 1,000 unchanged.
# Prints figures; never fails on timing.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
n=${2:-10000}
pkitd=$build/daemon/pkitd
[ -x "$pkitd" ] || { echo "no pkitd at $pkitd"; exit 0; }
command -v python3 >/dev/null || { echo "no python3"; exit 0; }
dir=$(mktemp -d /tmp/pkit-bench-config.XXXXXX)
trap 'kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT
pid=0

python3 - "$dir/chain/services" "$n" <<'PY'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
os.makedirs(d)
for i in range(n):
    after = f'after = ["s{i-1:05d}"]\n' if i else ''
    open(f'{d}/s{i:05d}.toml', 'w').write(f'command = ["/bin/true"]\nautostart = false\n{after}')
PY
start=$(date +%s.%N)
"$pkitd" --check --config "$dir/chain" >/dev/null
end=$(date +%s.%N)
printf 'pkitd --check, %d-service after chain: %.3f s\n' "$n" "$(echo "$end - $start" | bc)"

cat > "$dir/client.py" <<'PY'
import json, socket, sys, threading, time
path, mode = sys.argv[1], sys.argv[2]
def connect():
    s = socket.socket(socket.AF_UNIX)
    for _ in range(2000):
        try:
            s.connect(path); return s
        except OSError:
            time.sleep(0.005)
    raise SystemExit("no socket")
def call(s, f, cmd):
    s.sendall((json.dumps({"id": 1, "cmd": cmd}) + "\n").encode())
    return json.loads(f.readline())
if mode == "ping":
    s = connect(); f = s.makefile()
    call(s, f, "ping")
    sys.exit(0)
# stall: pings on one connection while reloads run on another
s = connect(); f = s.makefile()
r = connect(); rf = r.makefile()
done = threading.Event(); worst = [0.0]; count = [0]
def pinger():
    while not done.is_set():
        t = time.perf_counter(); call(s, f, "ping")
        worst[0] = max(worst[0], time.perf_counter() - t); count[0] += 1
th = threading.Thread(target=pinger); th.start()
time.sleep(0.2)
base = worst[0]
t = time.perf_counter(); reply = call(r, rf, "reload"); took = time.perf_counter() - t
time.sleep(0.1); done.set(); th.join()
res = reply.get("result", reply)
print(f"  reload reply after {took*1000:.0f} ms ({len(res.get('added', []))} added, "
      f"{res.get('unchanged')} unchanged); longest ping round trip meanwhile "
      f"{worst[0]*1000:.1f} ms (before the reload: {base*1000:.1f} ms; {count[0]} pings)")
PY

start=$(date +%s.%N)
"$pkitd" --config "$dir/chain" --socket "$dir/chain.sock" 2>/dev/null >/dev/null &
pid=$!
python3 "$dir/client.py" "$dir/chain.sock" ping
end=$(date +%s.%N)
printf 'pkitd start, %d-service after chain, to the first ping reply: %.3f s\n' "$n" \
    "$(echo "$end - $start" | bc)"
kill "$pid"; wait "$pid" 2>/dev/null

mkdir -p "$dir/reload/services"
"$pkitd" --config "$dir/reload" --socket "$dir/reload.sock" 2>/dev/null >/dev/null &
pid=$!
python3 "$dir/client.py" "$dir/reload.sock" ping
python3 - "$dir/reload/services" <<'PY'
import sys
for i in range(1000):
    open(f'{sys.argv[1]}/r{i:04d}.toml', 'w').write(
        'command = ["/bin/sleep", "1000"]\nautostart = false\n[restart]\npolicy = "always"\n')
PY
echo "reload of 1,000 services (added):"
python3 "$dir/client.py" "$dir/reload.sock" stall
echo "reload of 1,000 services (unchanged):"
python3 "$dir/client.py" "$dir/reload.sock" stall
kill "$pid"; wait "$pid" 2>/dev/null
exit 0
