#!/usr/bin/env python3
"""Stalled streaming clients beside a loud crash loop: pkitd's memory and
ping latency while 100 clients subscribe and never read, and its memory once they left.

    bench/bench_stalled_clients.py [BUILD_DIR] [--clients 100] [--seconds 60]

For --seconds, --clients connections (half `events`, half `logs` with `follow` of a
service printing without end) stay subscribed, each with a 4 KiB receive buffer and
never reading; one that pkitd cuts off (its queue passed the bound) is replaced at
once, so there are always --clients of them. Beside them four services crash in a
tight loop (backoff 1 ms). Meanwhile a separate connection pings every 10 ms. Printed:
pkitd's VmRSS at the start, its peak and last value during the window, VmRSS 10 s
after every client has left, ping p50/p99/max, and how many clients were cut off.
Goals: RSS <= 64 MiB during, < 16 MiB 10 s after, ping p99 <= 50 ms. Never fails.
"""

import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ping_for(sock, reader, seconds):
    pings = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pings.append(ping(sock, reader))
        time.sleep(0.01)
    return pings


def connect(path, rcvbuf=None):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.connect(path)
    return sock


def stalled(path, k):
    sock = connect(path, 4096)
    if k % 2 == 0:
        request = {"id": k, "cmd": "events"}
    else:
        request = {"id": k, "cmd": "logs", "service": "flood", "lines": 0, "follow": True}
    sock.sendall((json.dumps(request) + "\n").encode())
    return sock


def cut_off(sock):
    poller = select.poll()
    poller.register(sock, select.POLLRDHUP)
    return any(ev & (select.POLLRDHUP | select.POLLHUP) for _, ev in poller.poll(0))


def ping(sock, reader):
    start = time.monotonic()
    sock.sendall(b'{"id":1,"cmd":"ping"}\n')
    reader.readline()
    return time.monotonic() - start


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


def main():
    args = sys.argv[1:]
    build = "build"
    clients, seconds = 100, 60.0
    while args:
        arg = args.pop(0)
        if arg == "--clients":
            clients = int(args.pop(0))
        elif arg == "--seconds":
            seconds = float(args.pop(0))
        else:
            build = arg
    pkitd_bin = os.path.join(build, "daemon", "pkitd")
    tmp = tempfile.mkdtemp(prefix="pkit-bench-stalled-")
    os.makedirs(os.path.join(tmp, "services"))
    for name in ("crash1", "crash2", "crash3", "crash4"):
        with open(os.path.join(tmp, "services", name + ".toml"), "w") as f:
            f.write('command = ["/bin/sh", "-c", "echo starting up; echo giving up >&2; exit 1"]\n'
                    '[restart]\npolicy = "always"\nbackoff_initial = "1ms"\n'
                    'backoff_factor = 1.0\nmax_restarts = -1\njitter = false\n'
                    '[output]\nforward = "none"\n')
    with open(os.path.join(tmp, "services", "flood.toml"), "w") as f:
        f.write('command = ["/bin/sh", "-c", "while :; do seq -f \'flood line %g, padded to '
                'look like a real log line\' 1 500; sleep 0.1; done"]\n'
                '[output]\nforward = "none"\n')
    path = os.path.join(tmp, "pkitd.sock")
    env = dict(os.environ, PKIT_BENCH_MARKER=tmp)
    pkitd = subprocess.Popen([pkitd_bin, "--config", tmp, "--socket", path], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(path) and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(2)  # the crash loop gets going
        control = connect(path)
        reader = control.makefile("rb")
        # The same pings beside the same services, without the stalled clients: what
        # the machine's load alone costs.
        alone = ping_for(control, reader, 5)
        start_rss = rss_kb(pkitd.pid)
        cpu_start = cpu_seconds(pkitd.pid)
        socks = [stalled(path, k) for k in range(clients)]
        replaced = 0
        next_id = clients
        pings, peak = [], start_rss
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            pings.append(ping(control, reader))
            peak = max(peak, rss_kb(pkitd.pid))
            for i, sock in enumerate(socks):
                if cut_off(sock):
                    sock.close()
                    socks[i] = stalled(path, next_id if i % 2 == 0 else next_id + 1)
                    next_id += 2
                    replaced += 1
            time.sleep(0.01)
        during = rss_kb(pkitd.pid)
        cpu = cpu_seconds(pkitd.pid) - cpu_start
        for sock in socks:
            sock.close()
        time.sleep(10)
        after = rss_kb(pkitd.pid)
        mib = 1024.0
        print(f"stalled clients: {clients} for {seconds:.0f} s beside 4 crash loops and a flood")
        print(f"  RSS at start        {start_rss / mib:8.1f} MiB")
        print(f"  RSS peak during     {peak / mib:8.1f} MiB   (goal <= 64 MiB)")
        print(f"  RSS at the end      {during / mib:8.1f} MiB")
        print(f"  RSS 10 s after      {after / mib:8.1f} MiB   (goal < 16 MiB)")
        print(f"  ping p50/p99/max    {percentile(pings, 0.5) * 1e3:.2f} / "
              f"{percentile(pings, 0.99) * 1e3:.2f} / {max(pings) * 1e3:.2f} ms over "
              f"{len(pings)} pings   (goal p99 <= 50 ms)")
        print(f"  ping without them   {percentile(alone, 0.5) * 1e3:.2f} / "
              f"{percentile(alone, 0.99) * 1e3:.2f} / {max(alone) * 1e3:.2f} ms over "
              f"{len(alone)} pings (the same services, no stalled client)")
        print(f"  pkitd CPU during    {cpu:.1f} s of {seconds:.0f} s")
        print(f"  clients cut off and replaced: {replaced}")
    finally:
        pkitd.send_signal(signal.SIGTERM)
        try:
            pkitd.wait(15)
        except subprocess.TimeoutExpired:
            pkitd.kill()
            pkitd.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
