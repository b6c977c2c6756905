#!/usr/bin/env python3
"""Log files (SPEC §18) side by side: one writer of 100-byte lines paced at RATE MB/s,
its lines written to a file with rotation by pkitd ([output] file, text format), by
s6-log (`T`, a timestamp a line) and by svlogd (`-tt`), the same rotation size, in
alternating rounds. Prints, per logger, the medians of: MB/s reaching the files, the
logger's CPU per MB and share of a core, its peak RSS, and for pkitd the lines dropped
and `pkitctl status` latency (p50/p99) sampled while it writes. A logger that is not
installed is skipped with a note (`apt-get install s6 runit`). Never fails on timing.

  bench_logfile.py --pkitd BUILD/daemon/pkitd --pkitctl BUILD/ctl/pkitctl
                   [--rate 50] [--seconds 5] [--rounds 3]
"""

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

WRITER = r"""
import os, sys, time
rate = float(sys.argv[1]) * 1e6
chunk = (b"x" * 99 + b"\n") * 1000
t0 = time.monotonic(); sent = 0
while True:
    os.write(1, chunk); sent += len(chunk)
    ahead = sent / rate - (time.monotonic() - t0)
    if ahead > 0:
        time.sleep(ahead)
"""
ROTATE_BYTES = 10 * 1024 * 1024


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def dir_bytes(path):
    total = 0
    for name in os.listdir(path):
        try:
            total += os.path.getsize(os.path.join(path, name))
        except OSError:
            pass  # rotated away meanwhile
    return total


def measure(pid, logdir, seconds, sample=None):
    time.sleep(1)  # warm-up
    t0, c0, b0 = time.monotonic(), cpu_seconds(pid), dir_bytes(logdir)
    latencies = []
    while time.monotonic() - t0 < seconds:
        if sample:
            latencies.append(sample())
        else:
            time.sleep(0.1)
    t1, c1, b1 = time.monotonic(), cpu_seconds(pid), dir_bytes(logdir)
    mb = (b1 - b0) / 1e6
    return {
        "mbs": mb / (t1 - t0),
        "cpu_share": (c1 - c0) / (t1 - t0) * 100,
        "ms_per_mb": (c1 - c0) * 1000 / mb if mb > 0 else float("nan"),
        "rss": peak_rss_mib(pid),
        "latencies": latencies,
    }


def run_pkitd(args, work):
    conf = os.path.join(work, "conf")
    logs = os.path.join(work, "logs")
    os.makedirs(os.path.join(conf, "services"))
    os.makedirs(logs)
    writer = os.path.join(work, "writer.py")
    with open(writer, "w") as f:
        f.write(WRITER)
    with open(os.path.join(conf, "services", "w.toml"), "w") as f:
        f.write(f'command = ["python3", "{writer}", "{args.rate}"]\n'
                f'[output]\nfile = "{logs}/w.log"\n'
                f'file_max_size = "{ROTATE_BYTES // 1024}KiB"\nfile_keep = 1000\n')
    sock = os.path.join(work, "s.sock")
    daemon = subprocess.Popen([args.pkitd, "--config", conf, "--socket", sock],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/")
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(sock) and time.monotonic() < deadline:
            time.sleep(0.05)

        def status():
            t = time.monotonic()
            subprocess.run([args.pkitctl, "--socket", sock, "status", "w"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            return (time.monotonic() - t) * 1000

        result = measure(daemon.pid, logs, args.seconds, status)
        out = subprocess.run([args.pkitctl, "--socket", sock, "status", "w", "--json"],
                             capture_output=True, text=True).stdout
        result["dropped"] = out.split('"dropped":', 1)[1].split(",", 1)[0].strip() \
            if '"dropped":' in out else "?"
        return result
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=30)


def run_peer(args, work, kind):
    logs = os.path.join(work, "logs")
    os.makedirs(logs)
    if kind == "s6-log":
        logger = ["s6-log", "-b", "n1000", f"s{ROTATE_BYTES}", "T", logs]
    else:
        with open(os.path.join(logs, "config"), "w") as f:
            f.write(f"s{ROTATE_BYTES}\nn1000\n")
        logger = ["svlogd", "-tt", logs]
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(args.rate)],
                              stdout=subprocess.PIPE)
    proc = subprocess.Popen(logger, stdin=writer.stdout)
    writer.stdout.close()
    try:
        return measure(proc.pid, logs, args.seconds)
    finally:
        writer.kill()
        writer.wait()
        proc.terminate()
        proc.wait(timeout=30)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pkitd", required=True)
    parser.add_argument("--pkitctl", required=True)
    parser.add_argument("--rate", type=float, default=50.0)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    args.pkitd, args.pkitctl = os.path.abspath(args.pkitd), os.path.abspath(args.pkitctl)

    loggers = ["pkitd"]
    for peer in ("s6-log", "svlogd"):
        if shutil.which(peer):
            loggers.append(peer)
        else:
            print(f"# {peer} not installed (apt-get install s6 runit): skipped")
    results = {name: [] for name in loggers}
    for _ in range(args.rounds):
        for name in loggers:
            with tempfile.TemporaryDirectory(dir="/var/tmp", prefix="pkit-bench-log.") as work:
                if name == "pkitd":
                    results[name].append(run_pkitd(args, work))
                else:
                    results[name].append(run_peer(args, work, name))

    print(f"== log files: a writer at {args.rate:g} MB/s of 100-byte lines, rotation at "
          f"{ROTATE_BYTES >> 20} MiB, {args.rounds} rounds of {args.seconds:g} s (medians)")
    for name, runs in results.items():
        med = {k: statistics.median(r[k] for r in runs)
               for k in ("mbs", "cpu_share", "ms_per_mb", "rss")}
        line = (f"  {name:7} {med['mbs']:6.1f} MB/s to the files  {med['ms_per_mb']:5.1f} ms CPU "
                f"per MB  {med['cpu_share']:4.0f}% of a core  peak RSS {med['rss']:5.1f} MiB")
        if name == "pkitd":
            lat = sorted(x for r in runs for x in r["latencies"])
            if lat:
                p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
                line += f"  status p50 {statistics.median(lat):.1f} ms p99 {p99:.1f} ms"
            line += f"  dropped {','.join(str(r['dropped']) for r in runs)}"
        print(line)
    print("  (goal: pkitd >= 45 MB/s, status p99 <= 20 ms, RSS <= 32 MiB, "
          "its MB/s >= and CPU per MB <= s6-log's and svlogd's)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
