#!/usr/bin/env python3
# pkitctl status beside runit's sv status, several pkitctl builds in the same run:
# N `sleep 1000` services under one pkitd and under runsvdir, then rounds of
# CALLS calls of each command in turn (alternating, so that the load of a shared machine
# falls on all of them alike). Prints the median wall time (spawn to exit) and CPU time
# (the child's user + sys) of each, and the ratio of its wall time to sv status's.
# Prints figures only; never fails on timing.
#
#   bench_ctl_status.py PKITD SIZES CALLS ROUNDS NAME=PKITCTL...
#   e.g. bench_ctl_status.py build/daemon/pkitd 1,100,1000 20 5 \
#            before=/tmp/pkitctl-main after=build/ctl/pkitctl
import os, shutil, signal, statistics, subprocess, sys, tempfile, time

if len(sys.argv) < 6:
    sys.exit(__doc__ or "usage: bench_ctl_status.py PKITD SIZES CALLS ROUNDS NAME=PKITCTL...")
PKITD = sys.argv[1]
SIZES = [int(x) for x in sys.argv[2].split(",")]
CALLS, ROUNDS = int(sys.argv[3]), int(sys.argv[4])
CTLS = [arg.split("=", 1) for arg in sys.argv[5:]]
SV = shutil.which("sv") or "/usr/bin/sv"
RUNSVDIR = shutil.which("runsvdir") or "/usr/bin/runsvdir"


def run(argv):
    """Wall and CPU seconds of one call, stdout to /dev/null, and its exit status."""
    devnull = os.open("/dev/null", os.O_WRONLY)
    start = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, os.environ,
                         file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1)])
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    os.close(devnull)
    return wall, usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status)


def size(n):
    d = tempfile.mkdtemp(prefix="bench-ctl-status-")
    os.makedirs(d + "/cfg/services")
    paths = []
    for i in range(n):
        open(f"{d}/cfg/services/s{i:04}.toml", "w").write('command = ["sleep", "1000"]\n')
        os.makedirs(f"{d}/sv/s{i:04}")
        run_file = f"{d}/sv/s{i:04}/run"
        open(run_file, "w").write("#!/bin/sh\nexec sleep 1000\n")
        os.chmod(run_file, 0o755)
        paths.append(f"{d}/sv/s{i:04}")
    sock = d + "/pkitd.sock"
    pkitd = subprocess.Popen([PKITD, "--config", d + "/cfg", "--socket", sock],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    runit = subprocess.Popen([RUNSVDIR, d + "/sv"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            time.sleep(0.5)
            sv = subprocess.run([SV, "status"] + paths, capture_output=True, text=True).stdout
            ctl = subprocess.run([CTLS[0][1], "--socket", sock, "status"],
                                 capture_output=True, text=True).stdout
            if sv.count("run: ") == n and ctl.count(" running ") == n:
                break
        time.sleep(1.0)
        commands = [(name, [path, "--socket", sock, "status"]) for name, path in CTLS]
        commands.append(("sv status", [SV, "status"] + paths))
        walls = {name: [] for name, _ in commands}
        cpus = {name: [] for name, _ in commands}
        for _ in range(ROUNDS):
            for name, argv in commands:
                for _ in range(CALLS):
                    wall, cpu, code = run(argv)
                    if code == 0:
                        walls[name].append(wall)
                        cpus[name].append(cpu)
        load = os.getloadavg()[0]
        print(f"{n} services (load {load:.1f}, {ROUNDS} x {CALLS} calls each, alternating):")
        sv_wall = statistics.median(walls["sv status"]) if walls["sv status"] else float("nan")
        for name, _ in commands:
            if not walls[name]:
                print(f"  {name:>12}: every call failed")
                continue
            wall = statistics.median(walls[name])
            print(f"  {name:>12}: wall {wall * 1e3:7.2f} ms  cpu "
                  f"{statistics.median(cpus[name]) * 1e3:6.2f} ms  / sv status {wall / sv_wall:5.2f}")
    finally:
        pkitd.terminate()
        pkitd.wait()
        runit.send_signal(signal.SIGHUP)  # runsvdir sends TERM to every runsv, which stops its service
        runit.wait()
        time.sleep(0.5)
        shutil.rmtree(d, ignore_errors=True)


for n in SIZES:
    size(n)
