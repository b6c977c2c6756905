#!/usr/bin/env python3
# pkitd beside dinit on the same workloads: N `sleep 1000` services (N = 1, 100, 1,000
# by default), ROUNDS rounds alternating between the two supervisors. dinit is built
# from a source tree the user gives (DINIT_SRC, or --dinit-src: a snapshot of its public
# repository); the build goes to a cache folder keyed by the tree, and nothing of dinit
# enters this repository. Without a source tree the script prints a note and exits 0.
#
# Each round, for each supervisor and size, on a fresh supervisor:
#   all up     from the supervisor's fork until every service's child has exec'd
#              `sleep` (its children in /proc, polled every 5 ms)
#   memory     Pss (Pss_Anon, Pss_File), Rss and Private (clean + dirty) of the
#              supervisor from smaps_rollup, 2 s after all are up, before any request.
#              PSS splits a file's pages among the processes mapping it: dinit's shared
#              libstdc++ counts for less where other programs map it too (pkitd links it
#              statically), so read Rss and Private beside it
#   stop 1     wall time of the client's `stop s1` (both clients reply once the run has
#              ended), STOPS times a round, s1 started again between them
#   stop all   from the client's stop of every service (`pkitctl stop --all`,
#              `dinitctl stop boot`, whose services are held only by `boot`; dinit then
#              exits, having nothing left to run) until the supervisor has reaped its
#              last child
# dinit runs in user mode (-u) with a `boot` service of type internal whose
# `waits-for.d` folder names every service. PSS is load-insensitive; the times are not:
# on a shared machine read them side by side. Prints medians; never fails on timing.
#
#   bench_dinit.py [--dinit-src DIR] [--pkitd PATH] [--beside NAME=PATH...] [--pkitctl PATH]
#                  [--sizes 1,100,1000] [--rounds 3] [--stops 5] [--cache DIR]
# --beside runs other pkitd builds in the same rounds (with the same pkitctl).
import argparse, atexit, hashlib, os, shutil, signal, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
POLL = 0.005


def build_dinit(source, cache_root):
    """dinit and dinitctl built from `source` in a cache folder; (dinit, dinitctl)."""
    digest = hashlib.sha1(os.path.realpath(source).encode())
    for top, dirs, files in os.walk(source):
        dirs[:] = sorted(d for d in dirs if d not in (".git", "doc"))
        for name in sorted(files):
            path = os.path.join(top, name)
            if name.endswith((".o", ".d")) or not os.path.isfile(path):
                continue
            st = os.stat(path)
            digest.update(f"{os.path.relpath(path, source)} {st.st_size} {st.st_mtime_ns}\n".encode())
    folder = os.path.join(cache_root, "dinit-" + digest.hexdigest()[:12])
    dinit, dinitctl = folder + "/src/dinit", folder + "/src/dinitctl"
    if os.access(dinit, os.X_OK) and os.access(dinitctl, os.X_OK):
        return dinit, dinitctl
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(source, folder, ignore=shutil.ignore_patterns(".git", "*.o", "mconfig"))
    jobs = f"-j{os.cpu_count() or 1}"
    print(f"building dinit in {folder} (a few minutes on a busy machine)", flush=True)
    with open(folder + "/pkit-build.log", "w") as log:
        for step in (["make", "mconfig"], ["make", "-C", "build", "all"],
                     ["make", jobs, "-C", "src", "dinit", "dinitctl"]):
            if subprocess.run(step, cwd=folder, stdout=log, stderr=log).returncode != 0:
                sys.exit(f"bench_dinit: `{' '.join(step)}` failed; see {folder}/pkit-build.log")
    return dinit, dinitctl


def children(pid):
    found = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found += f.read().split()
    except OSError:
        pass
    return found


def execd(pids):
    count = 0
    for child in pids:
        try:
            with open(f"/proc/{child}/comm") as f:
                count += f.read().strip() == "sleep"
        except OSError:
            pass
    return count


def pss(pid):
    figures = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("Rss", "Pss", "Pss_Anon", "Pss_File", "Private_Clean", "Private_Dirty"):
                figures[key] = int(rest.split()[0])
    figures["Private"] = figures.pop("Private_Clean") + figures.pop("Private_Dirty")
    return figures


def wait_until(test, limit):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if test():
            return True
        time.sleep(POLL)
    return False


class Pkitd:
    def __init__(self, name, pkitd, pkitctl):
        self.name, self.pkitd, self.pkitctl = name, pkitd, pkitctl

    def tree(self, folder, n):
        os.mkdir(folder + "/services")
        for i in range(1, n + 1):
            with open(f"{folder}/services/s{i}.toml", "w") as f:
                f.write('command = ["/bin/sleep", "1000"]\n')

    def command(self, folder):
        self.sock = folder + "/pkitd.sock"
        return [self.pkitd, "--config", folder, "--socket", self.sock]

    def ctl(self, *words):
        return subprocess.run([self.pkitctl, "--socket", self.sock, *words],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode

    def stop_one(self):
        return self.ctl("stop", "s1")

    def start_one(self):
        return self.ctl("start", "s1")

    def stop_all(self):
        return self.ctl("stop", "--all")



class Dinit:
    name = "dinit"

    def __init__(self, dinit, dinitctl):
        self.dinit, self.dinitctl = dinit, dinitctl

    def tree(self, folder, n):
        services = folder + "/dinit.d"
        os.makedirs(services + "/boot.d")
        with open(services + "/boot", "w") as f:
            f.write("type = internal\nwaits-for.d = boot.d\n")
        for i in range(1, n + 1):
            with open(f"{services}/s{i}", "w") as f:
                f.write("type = process\ncommand = /bin/sleep 1000\n")
            open(f"{services}/boot.d/s{i}", "w").close()

    def command(self, folder):
        self.sock = folder + "/dinit.sock"
        return [self.dinit, "-u", "-q", "-d", folder + "/dinit.d", "-p", self.sock, "boot"]

    def ctl(self, *words):
        return subprocess.run([self.dinitctl, "-u", "-p", self.sock, *words],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode

    def stop_one(self):
        return self.ctl("stop", "s1")

    def start_one(self):
        # `wake`, not `start`: started again for `boot` alone, without the explicit
        # activation `start` would give it, so that stopping `boot` stops it too.
        return self.ctl("wake", "s1")

    def stop_all(self):
        return self.ctl("stop", "boot")



def all_up(pid, n):
    kids = children(pid)
    return len(kids) >= n and execd(kids) >= n


def one_round(sup, folder, n, stops):
    """Figures of one fresh supervisor with n services (its tree in `folder`): a dict,
    or None on failure."""
    proc = None
    try:
        env = dict(os.environ, PKIT_BENCH_MARKER="bench_dinit")
        start = time.perf_counter()
        proc = subprocess.Popen(sup.command(folder), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True, env=env, cwd=folder)
        if not wait_until(lambda: all_up(proc.pid, n), 120):
            print(f"  {sup.name}, {n}: not all up in 120 s", flush=True)
            return None
        figures = {"up": time.perf_counter() - start}
        time.sleep(2)
        figures.update(pss(proc.pid))
        stop_times = []
        for _ in range(stops):
            began = time.perf_counter()
            code = sup.stop_one()
            took = time.perf_counter() - began
            if code != 0 or len(children(proc.pid)) != n - 1:
                print(f"  {sup.name}, {n}: stop s1 failed ({code})", flush=True)
                return None
            stop_times.append(took)
            if sup.start_one() != 0 or not wait_until(lambda: all_up(proc.pid, n), 30):
                print(f"  {sup.name}, {n}: s1 did not start again", flush=True)
                return None
        figures["stop1"] = statistics.median(stop_times)
        began = time.perf_counter()
        code = sup.stop_all()
        gone = wait_until(lambda: not children(proc.pid), 60)
        figures["stopall"] = time.perf_counter() - began if gone and code == 0 else None
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
        return figures
    finally:
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def main():
    # A `timeout` (run-benchmarks) ends the script through its finally blocks, which
    # kill the supervisor of the round and its services.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    parser = argparse.ArgumentParser(description="pkitd beside dinit (figures only)")
    parser.add_argument("--dinit-src", default=os.environ.get("DINIT_SRC", ""))
    parser.add_argument("--pkitd", default=os.path.join(HERE, "../build/daemon/pkitd"))
    parser.add_argument("--pkitctl", default="")
    parser.add_argument("--beside", action="append", default=[], metavar="NAME=PATH",
                        help="another pkitd, run in the same rounds (repeatable)")
    parser.add_argument("--sizes", default="1,100,1000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--stops", type=int, default=5)
    cache = os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache"))
    parser.add_argument("--cache", default=os.path.join(cache, "pkit-bench"))
    args = parser.parse_args()
    if not args.dinit_src:
        print("bench_dinit: skipped: no dinit source tree (DINIT_SRC=DIR or --dinit-src DIR, "
              "a snapshot of https://github.com/davmac314/dinit)")
        return
    if not os.path.isfile(os.path.join(args.dinit_src, "src/dinit.cc")):
        print(f"bench_dinit: skipped: {args.dinit_src} holds no dinit source (src/dinit.cc)")
        return
    pkitctl = args.pkitctl or os.path.join(os.path.dirname(os.path.abspath(args.pkitd)),
                                           "../ctl/pkitctl")
    dinit, dinitctl = build_dinit(args.dinit_src, args.cache)
    sups = [Pkitd("pkitd", args.pkitd, pkitctl)]
    for other in args.beside:
        name, _, path = other.partition("=")
        if not path or name in ("pkitd", "dinit"):
            parser.error("--beside takes NAME=PATH, NAME neither pkitd nor dinit")
        sups.append(Pkitd(name, path, pkitctl))
    sups.append(Dinit(dinit, dinitctl))
    sizes = [int(s) for s in args.sizes.split(",")]
    # One tree a supervisor and size for every round, written before the first: pkitd
    # keeps the parse of a file for its first reload only once the file is 2 s old
    # (config/loader.hpp, k_racy_seconds), as an operator's files are.
    top = tempfile.mkdtemp(prefix="pkit-bench-dinit-")
    atexit.register(shutil.rmtree, top, True)
    folders = {}
    for sup in sups:
        for n in sizes:
            folders[(sup.name, n)] = f"{top}/{sup.name}-{n}"
            os.mkdir(folders[(sup.name, n)])
            sup.tree(folders[(sup.name, n)], n)
    time.sleep(3)
    print(f"bench_dinit: pkitd {args.pkitd}, dinit {dinit}; load average "
          f"{open('/proc/loadavg').read().split()[:3]}", flush=True)
    results = {(s.name, n): [] for s in sups for n in sizes}
    for r in range(args.rounds):
        for n in sizes:
            for sup in sups:
                figures = one_round(sup, folders[(sup.name, n)], n, args.stops)
                if figures:
                    results[(sup.name, n)].append(figures)
                    shown = ", ".join(f"{k} {v * 1000:.1f} ms" if isinstance(v, float) else
                                      f"{k} {v} kB" for k, v in figures.items() if v is not None)
                    print(f"round {r + 1}, {n} services, {sup.name}: {shown}", flush=True)
    print(f"\nmedians of {args.rounds} rounds (load average now "
          f"{' '.join(open('/proc/loadavg').read().split()[:3])}):")
    rows = [("PSS (MiB)", "Pss", 1 / 1024), ("  Pss_Anon (MiB)", "Pss_Anon", 1 / 1024),
            ("  Pss_File (MiB)", "Pss_File", 1 / 1024), ("Rss (MiB)", "Rss", 1 / 1024),
            ("Private (MiB)", "Private", 1 / 1024), ("all up (ms)", "up", 1000),
            ("stop 1 service (ms)", "stop1", 1000), ("stop all (ms)", "stopall", 1000)]
    names = [sup.name for sup in sups]
    print("| figure | N | " + " | ".join(names) + " | pkitd / dinit |")
    print("|---|---|" + "---|" * len(names) + "---|")
    show = lambda v: "—" if v is None else f"{v:.2f}"
    for label, key, scale in rows:
        for n in sizes:
            med = {}
            for name in names:
                values = [f[key] for f in results[(name, n)] if f.get(key) is not None]
                med[name] = statistics.median(values) * scale if values else None
            p, d = med["pkitd"], med["dinit"]
            ratio = f"{p / d:.2f}×" if p is not None and d else "—"
            print(f"| {label} | {n:,} | " + " | ".join(show(med[name]) for name in names) +
                  f" | {ratio} |")


main()
