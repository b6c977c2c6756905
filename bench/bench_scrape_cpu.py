#!/usr/bin/env python3
# pkitd's CPU per /metrics scrape when one client scrapes in a loop (a connection a
# scrape, every body read whole): 1,000 stopped services (`instances = 1000`,
# autostart off), a body of about 1.1 MB, so that most scrapes share the render of
# the 1 s cache and the figure is what sending one body costs. pkitd's utime+stime
# over --seconds windows, divided by the scrapes in each; the pkitds given run
# alternately, --rounds times each. Prints figures only; never fails on timing.
#
#   bench_scrape_cpu.py [--seconds 5] [--rounds 3] NAME=PKITD [NAME=PKITD ...]
#   e.g. bench_scrape_cpu.py new=build/daemon/pkitd old=/tmp/old/build/daemon/pkitd
import argparse, os, shutil, statistics, subprocess, tempfile, time

from bench_common import (add_pkitds_argument, cpu_seconds, free_port, named_pkitds, scrape,
                          stop)


def window(pkitd, seconds):
    """ms of pkitd's CPU per scrape over one window of a fresh pkitd, and the body size."""
    d = tempfile.mkdtemp(prefix="pkit-bench-scrape-")
    port = free_port()
    os.makedirs(d + "/services")
    open(d + "/pkitd.toml", "w").write(f'[http]\nlisten = "127.0.0.1:{port}"\n')
    open(d + "/services/idle.toml", "w").write(
        'command = ["/bin/true"]\nautostart = false\ninstances = 1000\n')
    p = subprocess.Popen([pkitd, "--config", d, "--socket", d + "/s.sock"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        size = 0
        while time.monotonic() < deadline and size == 0:
            try:
                size = scrape(port, timeout=10)[1]
            except OSError:
                time.sleep(0.1)
        before, begin, scrapes = cpu_seconds(p.pid), time.monotonic(), 0
        while time.monotonic() - begin < seconds:
            scrape(port, timeout=10)
            scrapes += 1
        return (cpu_seconds(p.pid) - before) / max(scrapes, 1) * 1e3, size, scrapes
    finally:
        stop(p)
        shutil.rmtree(d, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    add_pkitds_argument(parser)
    args = parser.parse_args()
    named = named_pkitds(parser, args)
    results = {name: [] for name, _ in named}
    sizes = {}
    for _ in range(args.rounds):
        for name, path in named:
            ms, size, scrapes = window(path, args.seconds)
            results[name].append(ms)
            sizes[name] = (size, scrapes)
    print(f"== pkitd CPU per /metrics scrape, one client in a loop, 1,000 services "
          f"({args.rounds} windows of {args.seconds:g} s each, alternating)")
    for name, values in results.items():
        size, scrapes = sizes[name]
        print(f"  {name:10} median {statistics.median(values):.3f} ms  "
              f"(windows: {', '.join(f'{v:.3f}' for v in values)}; "
              f"body {size} bytes, {scrapes} scrapes in the last window)")


if __name__ == "__main__":
    main()
