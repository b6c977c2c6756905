# Helpers shared by the Python benches run from the source tree (bench/*.py import it
# as a sibling module; Python puts a script's own folder on its path).
import os, socket, subprocess


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid):
    """utime + stime of process `pid`, every thread."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def scrape(port, timeout=30):
    """GET /metrics on a connection of its own, read to the end: (whether the status was
    200, the response's bytes)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n")
        head = s.recv(1 << 20)
        got = len(head)
        while chunk := s.recv(1 << 20):
            got += len(chunk)
    return head.startswith(b"HTTP/1.1 200"), got


def stop(proc, timeout=120):
    """SIGTERM to `proc` (a subprocess.Popen), then SIGKILL if it has not exited within
    `timeout` seconds; waits for it either way."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def add_pkitds_argument(parser):
    parser.add_argument("pkitds", nargs="+", help="NAME=PATH")


def named_pkitds(parser, args):
    """The (name, path) pairs of the NAME=PATH arguments, in order."""
    if any("=" not in p for p in args.pkitds):
        parser.error("each pkitd is given as NAME=PATH")
    return [tuple(p.split("=", 1)) for p in args.pkitds]
