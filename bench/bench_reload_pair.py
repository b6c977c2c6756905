#!/usr/bin/env python3
# Two pkitd builds side by side on trees of SERVICES services (default 10,000) each:
# the first reload after start-up, then ROUNDS (default 30) reloads with nothing
# changed, alternating between the two so that both see the same machine. Each figure
# is the `reload` round trip on the control socket. The trees are written, then left
# 3 s before pkitd starts: pkitd trusts a file's identity only once its ctime is over
# 2 s older than the read (pkitd(8), RELOAD), as an operator's files usually are.
# Prints figures only; never fails on timing.
#   Usage: [SERVICES=N] [ROUNDS=N] bench_reload_pair.py OLD_PKITD NEW_PKITD
import json, os, resource, shutil, socket, statistics, subprocess, sys, tempfile, time

if len(sys.argv) != 3:
    print("usage: [SERVICES=N] [ROUNDS=N] bench_reload_pair.py OLD_PKITD NEW_PKITD")
    sys.exit(0)
N = int(os.environ.get("SERVICES", "10000"))
ROUNDS = int(os.environ.get("ROUNDS", "30"))
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # two pipes a run
subjects = {}
for label, binary in (("old", sys.argv[1]), ("new", sys.argv[2])):
    d = tempfile.mkdtemp(prefix=f"reload-pair-{label}-")
    os.makedirs(d + "/services")
    for i in range(N):
        with open(f"{d}/services/s{i:05d}.toml", "w") as f:
            f.write('command = ["sleep", "1000"]\n')
    subjects[label] = {"binary": binary, "dir": d, "sock": d + "/s.sock", "times": []}
time.sleep(3.0)
for s in subjects.values():
    s["proc"] = subprocess.Popen([s["binary"], "--config", s["dir"], "--socket", s["sock"]],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def connect(path):
    deadline = time.monotonic() + 60
    while True:
        try:
            c = socket.socket(socket.AF_UNIX)
            c.connect(path)
            return c, c.makefile("r")
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def request(s, obj):
    s["conn"].sendall((json.dumps(obj) + "\n").encode())
    return json.loads(s["reader"].readline())


def reload_ms(s):
    begin = time.monotonic()
    reply = request(s, {"id": 1, "cmd": "reload"})
    took = (time.monotonic() - begin) * 1e3
    return took if reply.get("ok") else float("nan")


try:
    for s in subjects.values():
        s["conn"], s["reader"] = connect(s["sock"])
    # Every service started (or given up for want of descriptors) before the clock runs.
    for s in subjects.values():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            rows = request(s, {"id": 2, "cmd": "status"}).get("result", {}).get("services", [])
            if sum(1 for r in rows if r.get("state") != "starting") >= N:
                break
            time.sleep(0.5)
    time.sleep(2.0)
    for label, s in subjects.items():
        print(f"{label}: the first reload after start-up {reload_ms(s):.1f} ms")
    for _ in range(ROUNDS):
        for s in subjects.values():
            s["times"].append(reload_ms(s))
    for label, s in subjects.items():
        t = sorted(x for x in s["times"] if x == x)
        if t:
            print(f"{label}: reload, nothing changed, {len(t)} rounds: median {statistics.median(t):.1f} ms,"
                  f" p10 {t[len(t) // 10]:.1f}, p90 {t[len(t) * 9 // 10]:.1f}")
finally:
    for s in subjects.values():
        if "proc" in s:
            s["proc"].terminate()
    for s in subjects.values():
        if "proc" in s:
            try:
                s["proc"].wait(timeout=60)
            except subprocess.TimeoutExpired:
                s["proc"].kill()
        shutil.rmtree(s["dir"], ignore_errors=True)
