// pkit beside runit, in the same run: the status query with each
// supervisor's own tool, and start-up of many services. Every figure is a median of
// the rounds, pkit and runit alternating, with the ratio pkit / runit beside it.
//
//   - status: N `sleep 1000` services (N in --sizes, 1,100,1000): `pkitctl status`
//     (the table) against `sv status DIR/*` (runit's own tool, every service named on
//     its command line, as a shell glob would), whole program wall time, --calls each;
//   - start-up: --startup (1000) such services, from the supervisor's fork (pkitd, or
//     `runsvdir DIR`) until every service's `sleep` has exec'd: the same neutral test
//     for both, the process tree in /proc (pkitd's children; runsvdir's grandchildren,
//     under runsv), polled every 5 ms; --rounds fresh supervisors of each;
//   - pkitd's and runsvdir's (all runsv processes included) CPU time by then;
//   - the floor beside them: a bare process that only posix_spawn()s the same N
//     `sleep 1000` from one thread (vfork-style, as fast as the C library can) and
//     supervises nothing, timed the same way. No supervisor can start N services faster
//     than the machine starts N processes; the ratio to it says what pkitd adds.
//
// runit's services are directories with `run` = `#!/bin/sh` + `exec sleep 1000`, the
// usual form. runsvdir is stopped with SIGHUP (TERM to every runsv), then anything
// still carrying the bench marker is killed.
//
//   bench_runit --pkitd PATH --pkitctl PATH [--runsvdir /usr/bin/runsvdir]
//               [--sv /usr/bin/sv] [--sizes 1,100,1000] [--calls 30] [--startup 1000]
//               [--rounds 3] [--timeout 60] (seconds a supervisor has to start them all)

#include <spawn.h>
#include <sys/stat.h>

#include <filesystem>
#include <set>

#include "bench/bench_util.hpp"

namespace {

using namespace pkit::bench;

double g_timeout = 60.0;  // --timeout

// The children of `pid`: /proc/PID/task/TID/children of every thread, since a child
// is listed under the thread that created it (pkitd's spawner thread clones its runs).
std::vector<pid_t> children_of(pid_t pid) {
    std::vector<pid_t> found;
    std::error_code error;
    std::filesystem::directory_iterator tasks("/proc/" + std::to_string(pid) + "/task", error);
    for (; !error && tasks != std::filesystem::directory_iterator(); tasks.increment(error)) {
        std::istringstream in(read_text((tasks->path() / "children").string()));
        long child = 0;
        while (in >> child) {
            found.push_back(static_cast<pid_t>(child));
        }
    }
    return found;
}

bool is_sleep(pid_t pid) {
    std::string comm = read_text("/proc/" + std::to_string(pid) + "/comm");
    return comm == "sleep\n";
}

// Counts the exec'd `sleep` processes `depth` generations under `root` (1: children,
// 2: grandchildren); `seen` keeps those already found, so that each is read once.
std::size_t count_sleeps(pid_t root, int depth, std::set<pid_t>& seen) {
    std::vector<pid_t> level{root};
    for (int d = 0; d < depth; ++d) {
        std::vector<pid_t> next;
        for (pid_t p : level) {
            for (pid_t c : children_of(p)) {
                next.push_back(c);
            }
        }
        level.swap(next);
    }
    for (pid_t p : level) {
        if (!seen.contains(p) && is_sleep(p)) {
            seen.insert(p);
        }
    }
    return seen.size();
}

// Seconds from `started_at` until `count` sleeps run under `root`, or NaN.
double wait_sleeps(pid_t root, int depth, std::size_t count, double started_at, double timeout) {
    std::set<pid_t> seen;
    while (mono_seconds() - started_at < timeout) {
        if (count_sleeps(root, depth, seen) >= count) {
            return mono_seconds() - started_at;
        }
        sleep_seconds(0.005);
    }
    return NAN;
}

// A runsvdir over a directory of service directories.
class Runsvdir {
public:
    Runsvdir(std::string binary, std::string dir)
        : m_binary(std::move(binary)), m_dir(std::move(dir)) {}
    ~Runsvdir() { stop(); }
    Runsvdir(const Runsvdir&) = delete;
    Runsvdir& operator=(const Runsvdir&) = delete;

    bool start() {
        int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
        std::string marker = "PKIT_BENCH_MARKER=" + m_dir;
        m_started_at = mono_seconds();
        m_pid = ::fork();
        if (m_pid == 0) {
            ::setpgid(0, 0);
            ::dup2(null_fd, 0);
            ::dup2(null_fd, 1);
            ::dup2(null_fd, 2);
            ::putenv(marker.data());
            ::execl(m_binary.c_str(), m_binary.c_str(), m_dir.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
        ::close(null_fd);
        return m_pid > 0;
    }

    void stop() {
        if (m_pid > 0) {
            ::kill(m_pid, SIGHUP);
            int status = 0;
            double begin = mono_seconds();
            while (::waitpid(m_pid, &status, WNOHANG) != m_pid) {
                if (mono_seconds() - begin > 10.0) {
                    ::kill(m_pid, SIGKILL);
                    ::waitpid(m_pid, &status, 0);
                    break;
                }
                sleep_seconds(0.005);
            }
            m_pid = -1;
        }
        // runsv stops its service on TERM; whatever is left goes.
        for (int pass = 0; pass < 50; ++pass) {
            auto left = marked_processes(m_dir);
            if (left.empty()) {
                break;
            }
            for (pid_t p : left) {
                ::kill(p, pass < 20 ? SIGTERM : SIGKILL);
            }
            sleep_seconds(0.1);
        }
    }

    pid_t pid() const { return m_pid; }
    double started_at() const { return m_started_at; }

private:
    std::string m_binary;
    std::string m_dir;
    pid_t m_pid = -1;
    double m_started_at = 0.0;
};

// CPU time (user + sys) of `pid` and every live descendant.
double tree_cpu(pid_t pid) {
    double total = cpu_seconds(pid);
    for (pid_t c : children_of(pid)) {
        total += tree_cpu(c);
    }
    return total;
}

void write_pkit_tree(const TempDir& dir, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        dir.write("services/" + service_name(i) + ".toml", "command = [\"sleep\", \"1000\"]\n");
    }
}

std::vector<std::string> write_runit_tree(const TempDir& dir, std::size_t n) {
    std::vector<std::string> paths;
    for (std::size_t i = 0; i < n; ++i) {
        std::string run = "sv/" + service_name(i) + "/run";
        dir.write(run, "#!/bin/sh\nexec sleep 1000\n");
        ::chmod(dir.file(run).c_str(), 0755);
        paths.push_back(dir.file("sv/" + service_name(i)));
    }
    return paths;
}

std::string ms(double seconds) {
    return std::isnan(seconds) ? "n/a" : format_number(seconds * 1e3, 2);
}

std::string ratio(double pkit, double runit) {
    if (std::isnan(pkit) || std::isnan(runit) || runit <= 0) {
        return "-";
    }
    return format_number(pkit / runit, 2) + "x runit";
}

double median_or_nan(const std::vector<double>& v) {
    return v.empty() ? NAN : median(v);
}

void status_size(const std::string& pkitd_bin, const std::string& pkitctl,
                 const std::string& runsvdir_bin, const std::string& sv, std::size_t n,
                 long calls) {
    TempDir dir("pkit-bench-runit");
    write_pkit_tree(dir, n);
    std::vector<std::string> paths = write_runit_tree(dir, n);
    Pkitd pkitd(pkitd_bin, dir.path());
    Runsvdir runit(runsvdir_bin, dir.file("sv"));
    std::string last = service_name(n - 1);
    std::vector<double> ctl;
    std::vector<double> svs;
    long ctl_failed = 0;
    long sv_failed = 0;
    if (!pkitd.start() || !runit.start() ||
        std::isnan(wait_sleeps(pkitd.pid(), 1, n, pkitd.started_at(), g_timeout)) ||
        std::isnan(wait_sleeps(runit.pid(), 2, n, runit.started_at(), g_timeout))) {
        print_note(std::to_string(n) + " services: a supervisor did not start them all");
        return;
    }
    sleep_seconds(1.0);  // both quiet
    std::vector<std::string> sv_argv{sv, "status"};
    sv_argv.insert(sv_argv.end(), paths.begin(), paths.end());
    std::string out = dir.file("out");
    for (long i = 0; i < calls; ++i) {
        ProgramRun a = run_program({pkitctl, "--socket", pkitd.socket_path(), "status"}, 10.0, out);
        if (a.exit_code == 0 && read_text(out).find(last) != std::string::npos) {
            ctl.push_back(a.seconds);
        } else {
            ++ctl_failed;
        }
        ProgramRun b = run_program(sv_argv, 10.0, out);
        std::string text = read_text(out);
        if (b.exit_code == 0 && text.find("run: " + paths.back()) != std::string::npos) {
            svs.push_back(b.seconds);
        } else {
            ++sv_failed;
        }
    }
    double p = median_or_nan(ctl);
    double r = median_or_nan(svs);
    std::string count = std::to_string(n) + (n == 1 ? " service" : " services");
    print_row("`pkitctl status`, " + count, ms(p), "ms", "<= sv status", ratio(p, r),
              std::isnan(p) || std::isnan(r) ? "no figure"
              : p <= r                       ? "meets"
                                             : "misses");
    print_row("`sv status` (runit), " + count, ms(r), "ms", "(peer)", "",
              std::to_string(svs.size()) + " ok, " + std::to_string(sv_failed) + " failed");
    print_row("  p90 pkitctl / sv", ms(percentile(ctl, 0.9)) + "/" + ms(percentile(svs, 0.9)), "ms",
              "", "", std::to_string(ctl_failed) + " pkitctl failed");
}

// The floor: a child of this bench that posix_spawn()s `n` `sleep 1000` and then waits
// to be killed, so that the sleeps are its children as pkitd's runs are pkitd's.
class BareSpawner {
public:
    explicit BareSpawner(std::size_t n) : m_n(n) {}
    ~BareSpawner() { stop(); }
    BareSpawner(const BareSpawner&) = delete;
    BareSpawner& operator=(const BareSpawner&) = delete;

    bool start() {
        m_started_at = mono_seconds();
        m_pid = ::fork();
        if (m_pid == 0) {
            ::setpgid(0, 0);
            int null_fd = ::open("/dev/null", O_RDWR);
            posix_spawn_file_actions_t actions;
            ::posix_spawn_file_actions_init(&actions);
            for (int fd = 0; fd < 3; ++fd) {
                ::posix_spawn_file_actions_adddup2(&actions, null_fd, fd);
            }
            char sleep_path[] = "/bin/sleep";
            char seconds[] = "1000";
            char* child_argv[] = {sleep_path, seconds, nullptr};
            for (std::size_t i = 0; i < m_n; ++i) {
                pid_t child = 0;
                ::posix_spawn(&child, sleep_path, &actions, nullptr, child_argv, environ);
            }
            for (;;) {
                ::pause();
            }
        }
        return m_pid > 0;
    }
    void stop() {
        if (m_pid <= 0) {
            return;
        }
        ::kill(-m_pid, SIGKILL);  // the spawner and its sleeps: one process group
        ::waitpid(m_pid, nullptr, 0);
        m_pid = -1;
    }
    pid_t pid() const { return m_pid; }
    double started_at() const { return m_started_at; }

private:
    std::size_t m_n;
    pid_t m_pid = -1;
    double m_started_at = 0.0;
};

void startup(const std::string& pkitd_bin, const std::string& runsvdir_bin, std::size_t n,
             int rounds) {
    TempDir dir("pkit-bench-runit");
    write_pkit_tree(dir, n);
    write_runit_tree(dir, n);
    std::vector<double> pkit_wall;
    std::vector<double> pkit_cpu;
    std::vector<double> runit_wall;
    std::vector<double> runit_cpu;
    std::vector<double> bare_wall;
    for (int r = 0; r < rounds; ++r) {
        {
            BareSpawner bare(n);
            if (bare.start()) {
                double took = wait_sleeps(bare.pid(), 1, n, bare.started_at(), g_timeout);
                if (!std::isnan(took)) {
                    bare_wall.push_back(took);
                }
            }
        }
        {
            Pkitd pkitd(pkitd_bin, dir.path());
            if (pkitd.start()) {
                double took = wait_sleeps(pkitd.pid(), 1, n, pkitd.started_at(), g_timeout);
                if (!std::isnan(took)) {
                    pkit_wall.push_back(took);
                    pkit_cpu.push_back(cpu_seconds(pkitd.pid()));
                }
            }
            pkitd.stop(30.0);
        }
        {
            Runsvdir runit(runsvdir_bin, dir.file("sv"));
            if (runit.start()) {
                double took = wait_sleeps(runit.pid(), 2, n, runit.started_at(), g_timeout);
                if (!std::isnan(took)) {
                    runit_wall.push_back(took);
                    // runsvdir and its runsv processes (the sleeps are not runit's).
                    double cpu = cpu_seconds(runit.pid());
                    for (pid_t c : children_of(runit.pid())) {
                        cpu += cpu_seconds(c);
                    }
                    runit_cpu.push_back(cpu);
                }
            }
            runit.stop();
        }
        // runsvdir leaves supervise/ directories behind: a fresh start each round.
        std::error_code ignored;
        for (std::size_t i = 0; i < n; ++i) {
            std::filesystem::remove_all(dir.file("sv/" + service_name(i) + "/supervise"), ignored);
        }
    }
    double p = median_or_nan(pkit_wall);
    double r = median_or_nan(runit_wall);
    std::string count = std::to_string(n) + " services";
    print_row("start-up, " + count + ", all exec'd: pkitd", ms(p), "ms", "<= 500 ms", ratio(p, r),
              std::isnan(p) ? "no figure"
              : p <= 0.5    ? "meets"
                            : "misses");
    print_row("start-up, " + count + ", all exec'd: runsvdir", ms(r), "ms", "(peer)", "",
              std::to_string(runit_wall.size()) + " of " + std::to_string(rounds) + " rounds");
    double b = median_or_nan(bare_wall);
    print_row("start-up, " + count + ", all exec'd: bare posix_spawn loop", ms(b), "ms", "(floor)",
              std::isnan(p) || std::isnan(b) ? "" : format_number(p / b, 2) + "x floor",
              std::to_string(bare_wall.size()) + " of " + std::to_string(rounds) + " rounds");
    print_row("  CPU by then: pkitd / runsvdir+runsv",
              ms(median_or_nan(pkit_cpu)) + "/" + ms(median_or_nan(runit_cpu)), "ms", "",
              ratio(median_or_nan(pkit_cpu), median_or_nan(runit_cpu)), "");
}

std::vector<std::size_t> parse_sizes(const std::string& text) {
    std::vector<std::size_t> sizes;
    std::istringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) {
        if (!item.empty()) {
            sizes.push_back(static_cast<std::size_t>(std::stoul(item)));
        }
    }
    return sizes;
}

}  // namespace

int main(int argc, char** argv) {
    std::string pkitd = arg(argc, argv, "--pkitd", "");
    std::string pkitctl = arg(argc, argv, "--pkitctl", "");
    std::string runsvdir = arg(argc, argv, "--runsvdir", "/usr/bin/runsvdir");
    std::string sv = arg(argc, argv, "--sv", "/usr/bin/sv");
    auto sizes = parse_sizes(arg(argc, argv, "--sizes", "1,100,1000"));
    long calls = static_cast<long>(arg_number(argc, argv, "--calls", 30));
    auto start_n = static_cast<std::size_t>(arg_number(argc, argv, "--startup", 1000));
    int rounds = static_cast<int>(arg_number(argc, argv, "--rounds", 3));
    g_timeout = arg_number(argc, argv, "--timeout", 60);
    if (pkitd.empty() || pkitctl.empty()) {
        std::fprintf(stderr, "usage: bench_runit --pkitd PATH --pkitctl PATH [...]\n");
        return 0;
    }
    if (::access(runsvdir.c_str(), X_OK) != 0 || ::access(sv.c_str(), X_OK) != 0) {
        std::printf("runit (%s, %s) is not installed: nothing to compare with\n", runsvdir.c_str(),
                    sv.c_str());
        return 0;
    }
    print_header("status with each supervisor's own tool (pkit beside runit, same run)");
    for (std::size_t n : sizes) {
        if (n > 0) {
            status_size(pkitd, pkitctl, runsvdir, sv, n, calls);
        }
    }
    if (start_n > 0 && rounds > 0) {
        print_header("start-up (pkit beside runit, alternating rounds)");
        startup(pkitd, runsvdir, start_n, rounds);
    }
    return 0;
}
