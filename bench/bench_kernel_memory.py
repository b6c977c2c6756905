#!/usr/bin/env python3
# What reading the services' resources leaves behind in pkitd: its open descriptors and
# the kernel's 4 KiB slab objects (kmalloc-cg-4k, charged to the reader's memory
# cgroup; a /proc/PID/stat file kept open after a read holds its page there), before
# and after three /metrics scrapes 1.2 s apart (a render each) and one `status` with
# resources, beside --services `sleep 1000` services (default 1,000). The slab counts
# are the whole machine's, so other activity shows in them: read them as the size of a
# change, next to the descriptors. Also the scrapes' latency. The pkitds given run one
# after the other, --rounds times each, alternately. Needs root for /proc/slabinfo.
# Prints figures only; never fails on timing.
#
#   bench_kernel_memory.py [--services 1000] [--rounds 2] NAME=PKITD [NAME=PKITD ...]
#   e.g. bench_kernel_memory.py new=build/daemon/pkitd old=/tmp/old/build/daemon/pkitd
import argparse, json, os, resource, shutil, socket, statistics, subprocess, tempfile, time

from bench_common import add_pkitds_argument, free_port, named_pkitds, scrape, stop


def slab_kib():
    try:
        for line in open("/proc/slabinfo"):
            fields = line.split()
            if fields and fields[0] == "kmalloc-cg-4k":
                return int(fields[1]) * 4  # active objects of 4 KiB
    except OSError:
        pass
    return None


def one_round(binary, services):
    d = tempfile.mkdtemp(prefix="pkit-bench-kmem-")
    port = free_port()
    os.makedirs(d + "/services")
    with open(d + "/pkitd.toml", "w") as f:
        f.write(f'[http]\nlisten = "127.0.0.1:{port}"\n')
    for i in range(services):
        with open(f"{d}/services/s{i:05d}.toml", "w") as f:
            f.write('command = ["sleep", "1000"]\n')
    proc = subprocess.Popen([binary, "--config", d, "--socket", d + "/s.sock"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while True:
            c = socket.socket(socket.AF_UNIX)
            try:
                c.connect(d + "/s.sock")
                break
            except OSError:
                c.close()
                if time.monotonic() > deadline:
                    return None
                time.sleep(0.1)
        lines = c.makefile("r")

        def request(req):
            c.sendall((json.dumps(req) + "\n").encode())
            line = lines.readline()
            return json.loads(line) if line else {}

        while True:
            rows = request({"id": 1, "cmd": "status"}).get("result", {}).get("services", [])
            if sum(r["state"] == "running" for r in rows) >= services:
                break
            if time.monotonic() > deadline:
                return None
            time.sleep(0.5)
        time.sleep(2.0)
        fds_before = len(os.listdir(f"/proc/{proc.pid}/fd"))
        slab_before = slab_kib()
        scrapes = []
        for _ in range(3):
            time.sleep(1.2)
            begin = time.monotonic()
            ok, _ = scrape(port)
            if not ok:
                return None
            scrapes.append(time.monotonic() - begin)
        request({"id": 2, "cmd": "status", "resources": True})
        fds_after = len(os.listdir(f"/proc/{proc.pid}/fd"))
        slab_after = slab_kib()
        c.close()
        slab = None if slab_before is None else (slab_after - slab_before) / 1024
        return fds_after - fds_before, slab, scrapes
    finally:
        stop(proc)
        shutil.rmtree(d, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--services", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    add_pkitds_argument(parser)
    args = parser.parse_args()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # two pipes a run
    named = named_pkitds(parser, args)
    results = {name: [] for name, _ in named}
    for _ in range(args.rounds):
        for name, binary in named:
            results[name].append(one_round(binary, args.services))
    print(f"== what reading resources leaves in pkitd, {args.services} services, "
          f"3 scrapes and a status with resources, {args.rounds} rounds each")
    for name, rounds in results.items():
        done = [r for r in rounds if r is not None]
        if not done:
            print(f"  {name}: no round completed (pkitd did not start or a scrape failed)")
            continue
        fds = " / ".join(str(r[0]) for r in done)
        slab = " / ".join("?" if r[1] is None else f"{r[1]:.1f}" for r in done)
        renders = statistics.median(s * 1e3 for r in done for s in r[2][1:])
        print(f"  {name}: descriptors added {fds}; kmalloc-cg-4k added {slab} MiB; "
              f"a render (scrapes 2 and 3) median {renders:.1f} ms")


if __name__ == "__main__":
    main()
