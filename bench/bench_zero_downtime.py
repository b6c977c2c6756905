#!/usr/bin/env python3
"""Restarts without downtime (SPEC §14): a small HTTP server restarted --restarts times
while one client sends requests without pause, one connection each, on 127.0.0.1.
Counts the failed requests (refused, reset, or no answer within 2 s) and the latency
percentiles of all of them, for:

  pkitd stop_first          the server binds its port itself (no [[listen]])
  pkitd listen              pkitd holds the socket ([[listen]]), stop_first
  pkitd listen+start_first  the same with [restart] order = "start_first"
  runit                     `sv -w 10 restart` (when runsvdir is installed)
  supervisord               `supervisorctl restart` (when supervisord is installed)

The server is the same everywhere: it takes its socket from LISTEN_FDS when pkitd
passes one, else binds the port; it says READY=1 when it has NOTIFY_SOCKET (pkitd's
services use [ready] notify = true, so a restart is answered once the new run
accepts); it ends on SIGTERM only between requests, so a stop never cuts an accepted
request short and every failure is the supervisor's gap. After each restart
returns, the loop waits --settle seconds (the same for all) before the next one.

    bench_zero_downtime.py --pkitd PATH --pkitctl PATH [--restarts 100] [--settle 0.2]
                           [--only NAME,...]

Figures only: it exits 0 whatever they are.
"""
import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

SERVER = r'''import os, signal, socket, sys
port = int(sys.argv[1])
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])
if os.environ.get('LISTEN_FDS') and os.environ.get('LISTEN_PID') == str(os.getpid()):
    s = socket.socket(fileno=3)
else:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(('127.0.0.1', port))
    s.listen(128)
s.settimeout(0.02)
if os.environ.get('NOTIFY_SOCKET'):
    n = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    n.sendto(b'READY=1', os.environ['NOTIFY_SOCKET'])
body = b'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok'
while signal.SIGTERM not in signal.sigpending():
    try:
        c, _ = s.accept()
    except socket.timeout:
        continue
    c.settimeout(5)
    data = b''
    try:
        while b'\r\n\r\n' not in data:
            chunk = c.recv(1024)
            if not chunk:
                break
            data += chunk
        c.sendall(body)
    except OSError:
        pass
    c.close()
'''

MARKER = 'PKIT_BENCH_MARKER'


def free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Client(threading.Thread):
    """Sends GET / without pause until stopped; keeps each latency and each failure."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port = port
        self.stop = False
        self.latencies = []
        self.failures = {'refused': 0, 'reset': 0, 'no answer': 0}

    def one(self):
        start = time.monotonic()
        s = socket.socket()
        s.settimeout(2.0)
        try:
            s.connect(('127.0.0.1', self.port))
            s.sendall(b'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n')
            data = b''
            while True:
                chunk = s.recv(1024)
                if not chunk:
                    break
                data += chunk
            if not data.endswith(b'ok'):
                self.failures['reset'] += 1
                return
            self.latencies.append(time.monotonic() - start)
        except ConnectionRefusedError:
            self.failures['refused'] += 1
            time.sleep(0.001)  # a refused connect returns at once: do not spin
        except socket.timeout:
            self.failures['no answer'] += 1
        except OSError:
            self.failures['reset'] += 1
        finally:
            s.close()

    def run(self):
        while not self.stop:
            self.one()


def wait_port(port, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(('127.0.0.1', port), timeout=1.0) as s:
                s.sendall(b'GET / HTTP/1.0\r\n\r\n')
                if s.recv(100):
                    return True
        except OSError:
            time.sleep(0.02)
    return False


def measure(name, port, restart, restarts, settle):
    client = Client(port)
    client.start()
    time.sleep(0.5)
    errors = 0
    for _ in range(restarts):
        if restart() != 0:
            errors += 1
        time.sleep(settle)
    time.sleep(0.5)
    client.stop = True
    client.join()
    lat = sorted(client.latencies)
    failed = sum(client.failures.values())

    def pct(p):
        return lat[min(len(lat) - 1, int(p / 100.0 * len(lat)))] * 1000 if lat else float('nan')

    kinds = ', '.join('%s %d' % (k, v) for k, v in client.failures.items() if v)
    print('%-26s %8d %7d  %7.2f %7.2f %8.1f %8.1f  %s%s' %
          (name, len(lat) + failed, failed, pct(50), pct(95), pct(99), lat[-1] * 1000
           if lat else float('nan'), kinds or '-',
           ('  (%d restarts failed)' % errors) if errors else ''))
    sys.stdout.flush()


def server_file(root):
    path = os.path.join(root, 'server.py')
    with open(path, 'w') as f:
        f.write(SERVER)
    return path


def run_pkitd(args, root, name, port, listen, start_first):
    conf = os.path.join(root, name.replace(' ', '_').replace('+', '_'))
    os.makedirs(os.path.join(conf, 'services'))
    toml = 'command = [%r, %r, "%d"]\n' % (sys.executable, server_file(root), port)
    toml = toml.replace("'", '"')
    if listen:
        toml += '[[listen]]\ntcp = "127.0.0.1:%d"\n' % port
    toml += '[ready]\nnotify = true\ntimeout = "10s"\n[output]\nforward = "none"\n'
    if start_first:
        toml += '[restart]\norder = "start_first"\n'
    with open(os.path.join(conf, 'services', 'web.toml'), 'w') as f:
        f.write(toml)
    sock = os.path.join(conf, 'pkitd.sock')
    env = dict(os.environ, **{MARKER: root})
    daemon = subprocess.Popen([args.pkitd, '--config', conf, '--socket', sock],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        if not wait_port(port):
            print('%-26s the server did not come up' % name)
            return

        def restart():
            return subprocess.call([args.pkitctl, '--socket', sock, 'restart', 'web'],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        measure(name, port, restart, args.restarts, args.settle)
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=30)


def run_peer(args, root, name, port, argv, stop_signal, restart_argv):
    """Runs a peer supervisor `argv` (marked, so that kill_marked finds what it left),
    restarts with `restart_argv` and stops it with `stop_signal`."""
    env = dict(os.environ, **{MARKER: root})
    daemon = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=env)
    try:
        if not wait_port(port):
            print('%-26s the server did not come up' % name)
            return
        measure(name, port, lambda: subprocess.call(restart_argv, stdout=subprocess.DEVNULL,
                                                    stderr=subprocess.DEVNULL),
                args.restarts, args.settle)
    finally:
        daemon.send_signal(stop_signal)
        daemon.wait(timeout=30)


def run_runit(args, root, port):
    runsvdir = shutil.which('runsvdir')
    sv = shutil.which('sv')
    if not runsvdir or not sv:
        print('%-26s not installed' % 'runit')
        return
    svdir = os.path.join(root, 'runit')
    web = os.path.join(svdir, 'web')
    os.makedirs(web)
    with open(os.path.join(web, 'run'), 'w') as f:
        f.write('#!/bin/sh\nexec %s %s %d\n' % (sys.executable, server_file(root), port))
    os.chmod(os.path.join(web, 'run'), 0o755)
    # SIGHUP: runsvdir sends TERM to every runsv, which stop their service.
    run_peer(args, root, 'runit (sv restart)', port, [runsvdir, svdir], signal.SIGHUP,
             [sv, '-w', '10', 'restart', web])


def run_supervisord(args, root, port):
    supervisord = shutil.which('supervisord')
    supervisorctl = shutil.which('supervisorctl')
    if not supervisord or not supervisorctl:
        print('%-26s not installed' % 'supervisord')
        return
    conf = os.path.join(root, 'supervisord.conf')
    sock = os.path.join(root, 'supervisor.sock')
    with open(conf, 'w') as f:
        f.write('[unix_http_server]\nfile=%s\n[supervisord]\nnodaemon=true\nlogfile=%s\n'
                'pidfile=%s\n[rpcinterface:supervisor]\nsupervisor.rpcinterface_factory = '
                'supervisor.rpcinterface:make_main_rpcinterface\n[supervisorctl]\n'
                'serverurl=unix://%s\n[program:web]\ncommand=%s %s %d\nstartsecs=0\n'
                'stopwaitsecs=5\n' % (sock, os.path.join(root, 'supervisord.log'),
                                      os.path.join(root, 'supervisord.pid'), sock,
                                      sys.executable, server_file(root), port))
    run_peer(args, root, 'supervisord (restart)', port, [supervisord, '-c', conf],
             signal.SIGTERM, [supervisorctl, '-c', conf, 'restart', 'web'])


def kill_marked(root):
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open('/proc/%s/environ' % pid, 'rb') as f:
                if (MARKER + '=' + root).encode() in f.read():
                    os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--pkitd', required=True)
    parser.add_argument('--pkitctl', required=True)
    parser.add_argument('--restarts', type=int, default=100)
    parser.add_argument('--settle', type=float, default=0.2)
    parser.add_argument('--only', default='')
    args = parser.parse_args()
    only = set(filter(None, args.only.split(',')))
    root = tempfile.mkdtemp(prefix='pkit-bench-zd-')
    print('zero downtime: %d restarts each, a client without pause, %.1f s between restarts'
          % (args.restarts, args.settle))
    print('%-26s %8s %7s  %7s %7s %8s %8s  %s' % ('', 'requests', 'failed', 'p50 ms', 'p95 ms',
                                                  'p99 ms', 'max ms', 'failures'))
    try:
        cases = [('stop_first', False, False), ('listen', True, False),
                 ('listen+start_first', True, True)]
        for key, listen, start_first in cases:
            if not only or key in only:
                run_pkitd(args, root, 'pkitd ' + key, free_port(), listen, start_first)
        if not only or 'runit' in only:
            run_runit(args, root, free_port())
        if not only or 'supervisord' in only:
            run_supervisord(args, root, free_port())
    finally:
        kill_marked(root)
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
