#!/usr/bin/env python3
# Two pkitd builds' shutdowns of SERVICES services (default 10,000), ROUNDS times each
# (default 3), alternating so that both see the same machine. Each round starts a fresh
# pkitd on its own tree, with [http] on a free port: three /metrics scrapes 1.1 s apart,
# then a control connection subscribed to events that reads nothing, as an operator's
# might be. Then SIGTERM; the figures are the time until pkitd has exited, until its last
# service process was gone (a FIFO every service holds open as its fd 3 reaches end of
# file, whoever reaps the process), and the difference: what pkitd took after its
# slowest stop. Prints figures only; never fails on timing.
#   Usage: [SERVICES=N] [ROUNDS=N] bench_shutdown_pair.py OLD_PKITD NEW_PKITD
import os, resource, shutil, signal, socket, statistics, subprocess, sys, tempfile, time
import urllib.request

from bench_common import free_port

if len(sys.argv) != 3:
    print("usage: [SERVICES=N] [ROUNDS=N] bench_shutdown_pair.py OLD_PKITD NEW_PKITD")
    sys.exit(0)
N = int(os.environ.get("SERVICES", "10000"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # two pipes a run


def children(pid):
    # The runs are cloned by pkitd's Spawner thread: every thread's children.
    found = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found += f.read().split()
    except OSError:
        pass
    return found


def one_shutdown(binary):
    d = tempfile.mkdtemp(prefix="pkit-shutdown-pair-")
    proc = None
    try:
        os.makedirs(d + "/services")
        fifo = d + "/gone.fifo"
        os.mkfifo(fifo)
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # before any writer
        command = f'command = ["/bin/sh", "-c", "exec 3>>{fifo} && exec /bin/sleep 1000"]\n'
        for i in range(N):
            with open(f"{d}/services/s{i:05d}.toml", "w") as f:
                f.write(command)
        port = free_port()
        with open(d + "/pkitd.toml", "w") as f:
            f.write(f'[http]\nlisten = "127.0.0.1:{port}"\n')
        time.sleep(3.0)  # files as old as an operator's (pkitd(8), RELOAD)
        proc = subprocess.Popen([binary, "--config", d, "--socket", d + "/s.sock"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 300
        while len(children(proc.pid)) < N - N // 100 and time.monotonic() < deadline:
            time.sleep(0.2)  # those short of descriptors retry; 1 % may be missing
        running = len(children(proc.pid))
        time.sleep(3.0)
        for _ in range(3):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=60).read()
            time.sleep(1.1)
        events = socket.socket(socket.AF_UNIX)
        events.connect(d + "/s.sock")
        events.sendall(b'{"id":1,"cmd":"events"}\n')
        time.sleep(1.0)
        begin = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        gone = None
        while proc.poll() is None and time.monotonic() - begin < 120:
            if gone is None:
                try:
                    if os.read(reader, 256) == b"":
                        gone = time.monotonic() - begin
                except BlockingIOError:
                    pass
            time.sleep(0.001)
        exited = time.monotonic() - begin
        events.close()
        os.close(reader)
        if proc.poll() is None:
            return None
        gone = exited if gone is None else gone
        return running, exited * 1e3, gone * 1e3
    finally:
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        shutil.rmtree(d, ignore_errors=True)


figures = {"old": [], "new": []}
for r in range(ROUNDS):
    for label, binary in (("old", sys.argv[1]), ("new", sys.argv[2])):
        got = one_shutdown(binary)
        if got is None:
            print(f"round {r + 1} {label}: pkitd did not exit within 120 s")
            continue
        running, exited, gone = got
        figures[label].append((exited, gone, exited - gone))
        print(f"round {r + 1} {label}: {running} running; SIGTERM until exit {exited:.0f} ms, "
              f"last service gone {gone:.0f} ms, pkitd's exit after it {exited - gone:.0f} ms",
              flush=True)
for label, rows in figures.items():
    if rows:
        exited, gone, tail = (statistics.median(column) for column in zip(*rows))
        print(f"{label} median of {len(rows)}: exit {exited:.0f} ms, gone {gone:.0f} ms, "
              f"after the last {tail:.0f} ms")
