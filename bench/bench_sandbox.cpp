// The cost of [security] (SPEC §19) and of [health] memory_max (SPEC §20).
//
// 1. Restart gap: runs per second of a `/bin/true` service restarted with zero backoff
//    (as bench_restart), under one pkitd with every [security] key set and one with
//    none, rounds alternating; then each group of keys alone (the two namespaces and
//    the capability calls), to show where the cost lies. Needs root.
// 2. Idle cost of the measurement: 1,000 `sleep 1000` services with memory_max at a 5 s
//    memory_interval, side by side with the same tree without it, both idle: pkitd's
//    CPU time (every thread, and the loop thread alone) and context switches over the
//    same windows.
// 3. Time to stop: a service that allocates 50 MiB a second past a 200 MiB memory_max
//    at memory_interval 1s writes the moment its RSS first crossed the limit
//    (CLOCK_MONOTONIC); the time from there until this program reads the run's `exited`
//    event, over several runs of the same service (restarted by its policy).
//
//   bench_sandbox --pkitd PATH [--seconds 2] [--rounds 5] [--services 1000]
//                 [--window 20] [--windows 3] [--kills 3] [--only gap|idle|stop]

#include <sys/wait.h>
#include <unistd.h>

#include <map>

#include "bench/bench_util.hpp"

namespace {

using namespace pkit::bench;

// --- 1. restart gap ------------------------------------------------------------------

// The paths the [security] keys name: not under /tmp, which private_tmp hides (a path
// under it would be missing inside the run), but in /run, made and removed here.
class SandboxPaths {
public:
    SandboxPaths() : m_root("/run/pkit-bench-sandbox-" + std::to_string(::getpid())) {
        for (const char* sub : {"data", "ro", "hidden"}) {
            std::filesystem::create_directories(file(sub));
        }
    }
    ~SandboxPaths() {
        std::error_code ignored;
        std::filesystem::remove_all(m_root, ignored);
    }
    SandboxPaths(const SandboxPaths&) = delete;
    SandboxPaths& operator=(const SandboxPaths&) = delete;
    std::string file(const std::string& name) const { return m_root + "/" + name; }

private:
    std::string m_root;
};

// One [security] variant of the /bin/true service: its table.
struct Variant {
    std::string name;
    std::string (*table)(const SandboxPaths& dir);
};

std::string no_security(const SandboxPaths&) {
    return "";
}

std::string every_key(const SandboxPaths& dir) {
    return "[security]\nno_new_privileges = true\ncapabilities = [\"CAP_NET_BIND_SERVICE\"]\n"
           "private_tmp = true\nprotect_system = \"strict\"\nwritable_paths = [\"" +
           dir.file("data") + "\"]\nread_only_paths = [\"" + dir.file("ro") +
           "\"]\ninaccessible_paths = [\"" + dir.file("hidden") + "\"]\nprivate_network = true\n";
}

std::string mount_keys(const SandboxPaths& dir) {
    return "[security]\nprivate_tmp = true\nprotect_system = \"strict\"\nwritable_paths = [\"" +
           dir.file("data") + "\"]\nread_only_paths = [\"" + dir.file("ro") +
           "\"]\ninaccessible_paths = [\"" + dir.file("hidden") + "\"]\n";
}

std::string network_key(const SandboxPaths&) {
    return "[security]\nprivate_network = true\n";
}

std::string credential_keys(const SandboxPaths&) {
    return "[security]\nno_new_privileges = true\ncapabilities = [\"CAP_NET_BIND_SERVICE\"]\n";
}

// The `run` counter of `spin` and the clock halfway through the request.
std::optional<std::pair<double, double>> sample_runs(Client& client) {
    double before = mono_seconds();
    json services =
        services_of(client.request_json(R"({"id":1,"cmd":"status","services":["spin"]})"));
    double after = mono_seconds();
    if (services.empty()) {
        return std::nullopt;
    }
    return std::pair{services[0].value("run", 0.0), (before + after) / 2.0};
}

// Seconds per run of `spin` with `variant`'s [security], over `seconds`; NaN when no
// run went by (or every launch failed: the last launch error is printed).
double gap_round(const std::string& binary, const Variant& variant, double seconds) {
    TempDir dir("pkit-bench-sandbox");
    SandboxPaths paths;
    dir.write("services/spin.toml",
              "command = [\"/bin/true\"]\n[restart]\npolicy = \"always\"\n"
              "backoff_initial = 0\njitter = false\n" +
                  variant.table(paths));
    Pkitd pkitd(binary, dir.path());
    Client client;
    if (!pkitd.start() || !pkitd.connect(client)) {
        return NAN;
    }
    sleep_seconds(0.3);  // past start-up
    auto first = sample_runs(client);
    sleep_seconds(seconds);
    auto last = sample_runs(client);
    json services =
        services_of(client.request_json(R"({"id":1,"cmd":"status","services":["spin"]})"));
    if (!services.empty() && services[0]["last_launch_error"].is_string()) {
        print_note(variant.name +
                   ": launch failed: " + services[0]["last_launch_error"].get<std::string>());
        return NAN;
    }
    if (first && last && last->first > first->first) {
        return (last->second - first->second) / (last->first - first->first);
    }
    return NAN;
}

void restart_gap(const std::string& binary, double seconds, int rounds) {
    print_header("restart gap with [security] (/bin/true, zero backoff, " + std::to_string(rounds) +
                 " rounds of " + format_number(seconds, 1) + " s, alternating)");
    if (::geteuid() != 0) {
        print_note("no figure: [security] needs root");
        return;
    }
    const std::vector<Variant> variants{{"no [security]", no_security},
                                        {"every [security] key", every_key},
                                        {"only the mount keys", mount_keys},
                                        {"only private_network", network_key},
                                        {"only no_new_privileges + capabilities", credential_keys}};
    std::vector<std::vector<double>> per_run(variants.size());
    for (int r = 0; r < rounds; ++r) {
        for (std::size_t v = 0; v < variants.size(); ++v) {
            double gap = gap_round(binary, variants[v], seconds);
            if (!std::isnan(gap)) {
                per_run[v].push_back(gap);
            }
        }
    }
    if (per_run[0].empty()) {
        print_row("pkitd, no [security]", "n/a", "ms/run", "(peer)", "-", "no figure");
        return;
    }
    const double base_ms = median(per_run[0]) * 1e3;
    print_row("pkitd, no [security]", format_number(base_ms, 3), "ms/run", "(peer)",
              format_number(1e3 / base_ms, 0) + " runs/s", "");
    for (std::size_t v = 1; v < variants.size(); ++v) {
        const std::string what = "pkitd, " + variants[v].name;
        if (per_run[v].empty()) {
            print_row(what, "n/a", "ms/run", "", "-", "no figure");
            continue;
        }
        const double ms = median(per_run[v]) * 1e3;
        const double ratio = ms / base_ms;
        const bool goal = v == 1;
        print_row(what, format_number(ms, 3), "ms/run", goal ? "<= 1.5x none" : "",
                  format_number(ratio, 2) + "x none (+" + format_number(ms - base_ms, 2) + ")",
                  goal ? (ratio <= 1.5 ? "meets" : "misses") : "");
    }
}

// --- 2. idle cost of the measurement ---------------------------------------------------

// utime + stime of thread `tid` of `pid`, in seconds.
double thread_cpu_seconds(pid_t pid, pid_t tid) {
    std::string stat =
        read_text("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/stat");
    std::size_t close = stat.rfind(')');
    if (close == std::string::npos || close + 2 >= stat.size()) {
        return NAN;
    }
    std::istringstream fields(stat.substr(close + 2));
    std::string field;
    double ticks = 0.0;
    for (int i = 3; i <= 15 && fields >> field; ++i) {
        if (i >= 14) {
            ticks += std::strtod(field.c_str(), nullptr);
        }
    }
    return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

long thread_switches(pid_t pid, pid_t tid) {
    std::string text =
        read_text("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/status");
    return proc_field(text, "voluntary_ctxt_switches:") +
           proc_field(text, "nonvoluntary_ctxt_switches:");
}

struct IdleSample {
    double cpu = 0, loop_cpu = 0;
    long switches = 0, loop_switches = 0;
};

IdleSample idle_sample(pid_t pid) {
    return {cpu_seconds(pid), thread_cpu_seconds(pid, pid), read_switches(pid).total(),
            thread_switches(pid, pid)};
}

void idle_cost(const std::string& binary, std::size_t services, double window, int windows) {
    print_header("idle cost of memory_max: " + std::to_string(services) +
                 " sleep services, memory_interval 5s, beside the same without (" +
                 std::to_string(windows) + " windows of " + format_number(window, 0) + " s)");
    TempDir with_dir("pkit-bench-memwatch");
    TempDir without_dir("pkit-bench-memwatch-none");
    for (std::size_t i = 0; i < services; ++i) {
        with_dir.write("services/" + service_name(i) + ".toml",
                       "command = [\"/bin/sleep\", \"1000\"]\n[health]\nmemory_max = \"1GiB\"\n"
                       "memory_interval = \"5s\"\n");
        without_dir.write("services/" + service_name(i) + ".toml",
                          "command = [\"/bin/sleep\", \"1000\"]\n");
    }
    Pkitd with(binary, with_dir.path());
    Pkitd without(binary, without_dir.path());
    Client a;
    Client b;
    if (!with.start() || !with.connect(a) || !without.start() || !without.connect(b) ||
        !wait_running(with, a, services, 120.0) || !wait_running(without, b, services, 120.0)) {
        print_note("no figure: the services did not all run");
        return;
    }
    a.close();
    b.close();
    sleep_seconds(6.0);  // past the first measurement
    std::vector<double> cpu_with, cpu_without, loop_with, wake_with, wake_without, loop_wake;
    for (int w = 0; w < windows; ++w) {
        IdleSample a0 = idle_sample(with.pid());
        IdleSample b0 = idle_sample(without.pid());
        sleep_seconds(window);
        IdleSample a1 = idle_sample(with.pid());
        IdleSample b1 = idle_sample(without.pid());
        cpu_with.push_back((a1.cpu - a0.cpu) / window);
        cpu_without.push_back((b1.cpu - b0.cpu) / window);
        loop_with.push_back((a1.loop_cpu - a0.loop_cpu) / (window / 5.0));
        wake_with.push_back(static_cast<double>(a1.switches - a0.switches) / window);
        wake_without.push_back(static_cast<double>(b1.switches - b0.switches) / window);
        loop_wake.push_back(static_cast<double>(a1.loop_switches - a0.loop_switches) /
                            (window / 5.0));
    }
    const double share = median(cpu_with) * 100.0;
    print_row("pkitd CPU, memory_max on every service", format_number(share, 3), "% core",
              "<= 1 % of a core", format_number(share / 1.0, 2) + "x goal",
              share <= 1.0 ? "meets" : "misses");
    print_row("pkitd CPU, no memory_max (peer)", format_number(median(cpu_without) * 100.0, 3),
              "% core", "", "", "");
    print_row("  the loop thread's CPU per pass", format_number(median(loop_with) * 1e3, 2), "ms",
              "(a slice)", "", "");
    print_row("wakeups, memory_max on every service", format_number(median(wake_with), 2), "/s", "",
              "", "");
    print_row("  of which the loop thread, per pass", format_number(median(loop_wake), 1), "", "",
              "", "");
    print_row("wakeups, no memory_max (peer)", format_number(median(wake_without), 2), "/s", "0",
              "", "");
    print_note("CPU is clock-tick granular (10 ms): figures near 0 read as 0 or one tick");
}

// --- 3. time from crossing memory_max to the stop --------------------------------------

void time_to_stop(const std::string& binary, int kills) {
    print_header("time to stop: 50 MiB/s past a 200 MiB memory_max, memory_interval 1s (" +
                 std::to_string(kills) + " runs)");
    TempDir dir("pkit-bench-memkill");
    // Appends 5 MiB every 0.1 s (up to 1 GiB); once its own RSS passes 200 MiB it
    // writes CLOCK_MONOTONIC to DIR/cross.PID, the clock this program reads. pkitd
    // expands `$$` to `$` in a command, so perl's pid is written `$$$$`.
    const std::string script =
        "use Time::HiRes qw(clock_gettime CLOCK_MONOTONIC sleep); my @a; my $done = 0; "
        "open(my $s, '<', '/proc/self/statm'); "
        "for (1..200) { push @a, 'x' x (5 << 20); seek($s, 0, 0); my @f = split ' ', <$s>; "
        "if (!$done && $f[1] * 4096 > 200 * 1048576) { $done = 1; "
        "open(my $o, '>', \"" +
        dir.path() +
        "/cross.$$$$.tmp\"); printf $o \"%.6f\\n\", clock_gettime(CLOCK_MONOTONIC); close $o; "
        "rename(\"" +
        dir.path() + "/cross.$$$$.tmp\", \"" + dir.path() +
        "/cross.$$$$\"); } sleep(0.1); } sleep 1000;";
    std::string escaped;
    for (char c : script) {
        if (c == '"' || c == '\\') {
            escaped.push_back('\\');
        }
        escaped.push_back(c);
    }
    dir.write("services/hog.toml",
              "command = [\"/usr/bin/perl\", \"-e\", \"" + escaped +
                  "\"]\n[restart]\npolicy = \"always\"\nbackoff_initial = \"500ms\"\n"
                  "jitter = false\n[health]\nmemory_max = \"200MiB\"\nmemory_interval = \"1s\"\n");
    Pkitd pkitd(binary, dir.path());
    Client events;
    if (!pkitd.start() || !pkitd.connect(events) || !events.request(R"({"id":1,"cmd":"events"})")) {
        print_note("no figure: pkitd did not start");
        return;
    }
    std::map<double, pid_t> pid_of_run;  // run -> pid, from `started`
    std::vector<double> stops;
    std::vector<double> kill_lags;
    double killed_at = NAN;  // when the latest liveness_kill was read (it names no run)
    std::string line;
    const double until = mono_seconds() + 30.0 * kills;
    while (static_cast<int>(stops.size()) < kills && mono_seconds() < until &&
           events.read_line(line, until - mono_seconds())) {
        const double now = mono_seconds();
        json parsed = json::parse(line, nullptr, false);
        if (parsed.is_discarded() || !parsed.contains("event")) {
            continue;
        }
        const json& e = parsed["event"];
        const std::string type = e.value("type", "");
        const double run = e.value("run", 0.0);
        if (type == "started") {
            pid_of_run[run] = e.value("pid", 0);
        } else if (type == "liveness_kill") {
            killed_at = now;
        } else if (type == "exited" && e.value("killed_by", "") == "memory") {
            const std::string cross =
                read_text(dir.file("cross." + std::to_string(pid_of_run[run])));
            if (cross.empty()) {
                print_note("run " + format_number(run, 0) + " stopped before it crossed?");
                continue;
            }
            const double crossed = std::strtod(cross.c_str(), nullptr);
            stops.push_back(now - crossed);
            if (!std::isnan(killed_at)) {
                kill_lags.push_back(now - killed_at);
                killed_at = NAN;
            }
        }
    }
    if (stops.empty()) {
        print_row("crossing to stopped", "n/a", "s", "<= 3 s", "-", "no figure");
        return;
    }
    const double med = median(stops);
    const double worst = percentile(stops, 1.0);
    print_row("crossing memory_max to the run stopped", format_number(med, 2), "s", "<= 3 s",
              "max " + format_number(worst, 2) + " s", worst <= 3.0 ? "meets" : "misses");
    if (!kill_lags.empty()) {
        print_row("  of which the stop itself (SIGTERM to exit)",
                  format_number(median(kill_lags), 3), "s", "", "", "");
    }
}

}  // namespace

int main(int argc, char** argv) {
    std::string binary = arg(argc, argv, "--pkitd", "");
    double seconds = arg_number(argc, argv, "--seconds", 2.0);
    int rounds = static_cast<int>(arg_number(argc, argv, "--rounds", 5));
    auto services = static_cast<std::size_t>(arg_number(argc, argv, "--services", 1000));
    double window = arg_number(argc, argv, "--window", 20.0);
    int windows = static_cast<int>(arg_number(argc, argv, "--windows", 3));
    int kills = static_cast<int>(arg_number(argc, argv, "--kills", 3));
    std::string only = arg(argc, argv, "--only", "");
    if (binary.empty()) {
        std::fprintf(stderr,
                     "usage: bench_sandbox --pkitd PATH [--seconds S] [--rounds N] [--services N]"
                     " [--window S] [--windows N] [--kills N] [--only gap|idle|stop]\n");
        return 2;
    }
    if (only.empty() || only == "gap") {
        restart_gap(binary, seconds, rounds);
    }
    if (only.empty() || only == "idle") {
        idle_cost(binary, services, window, windows);
    }
    if (only.empty() || only == "stop") {
        time_to_stop(binary, kills);
    }
    return 0;
}
