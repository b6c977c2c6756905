#!/usr/bin/env python3
# Start-up of N `sleep 1000` services, several pkitd builds alternating in one run:
# from pkitd's fork until every service's child has exec'd `sleep`, found in /proc
# (the children of every pkitd thread: runs are cloned on the spawner thread), polled
# every 20 ms; and pkitd's CPU time (user + sys) by then. No status request, so pkitd
# answers nobody while it starts. Prints the median of ROUNDS for each build; never fails
# on timing.
#
#   bench_startup.py N ROUNDS NAME=PKITD...
#   e.g. bench_startup.py 1000 3 before=/tmp/pkitd-main after=build/daemon/pkitd
import glob, os, shutil, signal, statistics, subprocess, sys, tempfile, time

if len(sys.argv) < 4:
    sys.exit("usage: bench_startup.py N ROUNDS NAME=PKITD...")
N, ROUNDS = int(sys.argv[1]), int(sys.argv[2])
BUILDS = [arg.split("=", 1) for arg in sys.argv[3:]]
TICK = os.sysconf("SC_CLK_TCK")


def children(pid):
    found = []
    for path in glob.glob(f"/proc/{pid}/task/*/children"):
        try:
            found += open(path).read().split()
        except OSError:
            pass
    return found


def execd(pids):
    count = 0
    for child in pids:
        try:
            count += open(f"/proc/{child}/comm").read().strip() == "sleep"
        except OSError:
            pass
    return count


def one_start(pkitd, tree):
    start = time.perf_counter()
    daemon = subprocess.Popen([pkitd, "--config", tree, "--socket", tree + "/pkitd.sock"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    took = None
    try:
        while time.perf_counter() - start < 120:
            kids = children(daemon.pid)
            if len(kids) >= N and execd(kids) >= N:
                took = time.perf_counter() - start
                break
            time.sleep(0.02)
        fields = open(f"/proc/{daemon.pid}/stat").read().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / TICK
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=120)
    return took, cpu


def main():
    tree = tempfile.mkdtemp(prefix="pkit-bench-startup-")
    try:
        os.mkdir(tree + "/services")
        for i in range(N):
            with open(f"{tree}/services/s{i:04d}.toml", "w") as f:
                f.write('command = ["sleep", "1000"]\n')
        results = {name: [] for name, _ in BUILDS}
        for r in range(ROUNDS):
            for name, pkitd in BUILDS:
                took, cpu = one_start(pkitd, tree)
                results[name].append((took, cpu))
                shown = f"{took * 1000:.0f} ms" if took is not None else "not all in 120 s"
                print(f"round {r + 1} {name}: all {N} exec'd {shown}, pkitd CPU {cpu * 1000:.0f} ms",
                      flush=True)
                time.sleep(1)
        for name, runs in results.items():
            times = [t for t, _ in runs if t is not None]
            cpus = [c for _, c in runs]
            median = f"{statistics.median(times) * 1000:.0f} ms" if times else "no figure"
            print(f"{name}: median {median} over {len(times)} of {len(runs)} rounds, "
                  f"pkitd CPU median {statistics.median(cpus) * 1000:.0f} ms")
    finally:
        shutil.rmtree(tree, ignore_errors=True)


main()
