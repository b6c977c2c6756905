// What a Prometheus scrape of /metrics costs pkitd at scale (SPEC §11; goal: < 20 ms of
// pkitd CPU per scrape at 1,000 services). pkitd runs --services `sleep 1000` services
// with `[http] listen` on a free 127.0.0.1 port; once all run, --rounds rounds of
// --scrapes sequential `GET /metrics` (HTTP/1.0, a connection each) are timed:
//   - pkitd CPU per scrape: the loop thread's run time (/proc/PID/task/PID/schedstat,
//     nanoseconds) across each scrape, median; and utime+stime (/proc/PID/stat, clock
//     ticks) across each round divided by its scrapes, median of the rounds;
//   - latency: connect until the server closed, median and p99;
//   - the body's size and series count, checked to name every service;
//   - the kernel's floor under the resources pass: a bare pass over /proc/*/stat from
//     this program, once a round (pkitd splits its pass between two threads).
// With --baseline PATH a second pkitd (e.g. a build from before a change) runs the
// same tree at the same time, and the rounds alternate between the two, so both see
// the same machine and the same /proc.
//
// pkitd serves a finished exposition again for 1 s (pkitd(8)): --spacing 1.1 waits
// that out between scrapes, so that each one measures a render.
//
//   bench_metrics --pkitd PATH [--baseline PATH] [--services 1000] [--rounds 5]
//                 [--scrapes 20] [--spacing 0]

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "bench/bench_util.hpp"

namespace {

using namespace pkit::bench;

// Nanoseconds the thread `pid` (pkitd's loop thread) has run; -1 when unreadable.
long long run_nanoseconds(pid_t pid) {
    std::string text =
        read_text("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/schedstat");
    return text.empty() ? -1 : std::strtoll(text.c_str(), nullptr, 10);
}

// The kernel's floor under a scrape's resources pass: one bare pass over /proc that
// opens, reads and closes every /proc/PID/stat, as pkitd does, timed here with no
// pkitd involved (seconds). What it costs a process grows with the number of
// processes (the kernel's caches), and pkitd's pass can only follow it.
double bare_proc_pass() {
    const double begin = mono_seconds();
    DIR* proc = ::opendir("/proc");
    if (proc == nullptr) {
        return NAN;
    }
    char buffer[1024];
    while (const dirent* entry = ::readdir(proc)) {
        if (entry->d_name[0] < '1' || entry->d_name[0] > '9') {
            continue;
        }
        const std::string path = std::string(entry->d_name) + "/stat";
        int fd = ::openat(::dirfd(proc), path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            (void)!::read(fd, buffer, sizeof buffer);
            ::close(fd);
        }
    }
    ::closedir(proc);
    return mono_seconds() - begin;
}

struct Subject {
    std::string label;
    std::string binary;
    TempDir dir{"pkit-bench-metrics"};
    int port = 0;
    std::unique_ptr<Pkitd> pkitd;
    std::vector<double> cpu_ns;    // loop thread run time per scrape, seconds
    std::vector<double> cpu_tick;  // utime+stime per scrape, per round, seconds
    std::vector<double> latency;   // seconds
    long failures = 0;
    std::size_t body_bytes = 0;
    std::size_t samples = 0;
};

bool start(Subject& s, std::size_t services) {
    s.port = free_port();
    s.dir.write("pkitd.toml", "[http]\nlisten = \"127.0.0.1:" + std::to_string(s.port) + "\"\n");
    for (std::size_t i = 0; i < services; ++i) {
        s.dir.write("services/" + service_name(i) + ".toml",
                    "command = [\"/bin/sleep\", \"1000\"]\n");
    }
    s.pkitd = std::make_unique<Pkitd>(s.binary, s.dir.path());
    Client client;
    if (!s.pkitd->start() || !s.pkitd->connect(client, 30.0)) {
        return false;
    }
    // A hard RLIMIT_NOFILE of 20,000 (two pipes a run) leaves a few of 10,000 unable
    // to launch: 99 % running is enough, and the note says how many ran.
    if (!wait_running(*s.pkitd, client, services - services / 100, 300.0)) {
        return false;
    }
    sleep_seconds(1.0);
    json all = services_of(client.request_json(R"({"id":1,"cmd":"status"})", 30.0));
    print_note(s.label + ": " + std::to_string(count_state(all, "running")) + " of " +
               std::to_string(services) + " running");
    return true;
}

void round(Subject& s, int scrapes, std::size_t services, double spacing) {
    pid_t pid = s.pkitd->pid();
    double ticks_before = cpu_seconds(pid);
    int done = 0;
    for (int i = 0; i < scrapes; ++i) {
        if (spacing > 0) {
            sleep_seconds(spacing);
        }
        long long before = run_nanoseconds(pid);
        double begin = mono_seconds();
        std::string response = http_get(s.port, "/metrics", 10.0);
        double took = mono_seconds() - begin;
        long long after = run_nanoseconds(pid);
        std::size_t body = response.find("\r\n\r\n");
        if (response.rfind("HTTP/1.", 0) != 0 || response.find(" 200 ") == std::string::npos ||
            body == std::string::npos ||
            response.find("service=\"" + service_name(services - 1) + "\"") == std::string::npos) {
            ++s.failures;
            continue;
        }
        ++done;
        s.latency.push_back(took);
        if (before >= 0 && after >= before) {
            s.cpu_ns.push_back(static_cast<double>(after - before) / 1e9);
        }
        s.body_bytes = response.size() - body - 4;
        s.samples = static_cast<std::size_t>(
            std::count(response.begin() + static_cast<std::ptrdiff_t>(body), response.end(), '\n'));
    }
    double ticks_after = cpu_seconds(pid);
    if (done > 0 && !std::isnan(ticks_before) && !std::isnan(ticks_after)) {
        s.cpu_tick.push_back((ticks_after - ticks_before) / done);
    }
}

void report(const Subject& s) {
    double cpu = median(s.cpu_ns);
    print_row(s.label + ": pkitd CPU per scrape (loop thread)", format_number(cpu * 1e3, 2), "ms",
              "< 20 ms", format_number(cpu / 0.020, 2) + "x goal",
              cpu < 0.020 ? "meets" : "misses");
    double ticks = median(s.cpu_tick);
    print_row(s.label + ": pkitd utime+stime per scrape", format_number(ticks * 1e3, 2), "ms",
              "< 20 ms", "(10 ms ticks / round)", "");
    print_row(s.label + ": scrape latency", format_number(median(s.latency) * 1e3, 2), "ms", "",
              "p99 " + format_number(percentile(s.latency, 0.99) * 1e3, 2) + " ms", "");
    print_note(s.label + ": " + std::to_string(s.latency.size()) + " scrapes, " +
               std::to_string(s.failures) + " failed; body " + std::to_string(s.body_bytes) +
               " bytes, " + std::to_string(s.samples) + " lines");
}

}  // namespace

int main(int argc, char** argv) {
    std::string binary = arg(argc, argv, "--pkitd", "build/daemon/pkitd");
    std::string baseline = arg(argc, argv, "--baseline", "");
    auto services = static_cast<std::size_t>(arg_number(argc, argv, "--services", 1000));
    int rounds = static_cast<int>(arg_number(argc, argv, "--rounds", 5));
    int scrapes = static_cast<int>(arg_number(argc, argv, "--scrapes", 20));
    double spacing = arg_number(argc, argv, "--spacing", 0);
    if (services == 0) {
        services = 1;
    }

    std::vector<std::unique_ptr<Subject>> subjects;
    subjects.push_back(std::make_unique<Subject>());
    subjects.back()->label = "pkitd";
    subjects.back()->binary = binary;
    if (!baseline.empty()) {
        subjects.back()->label = "this pkitd";
        subjects.push_back(std::make_unique<Subject>());
        subjects.back()->label = "baseline";
        subjects.back()->binary = baseline;
    }
    print_header("/metrics scrape, " + std::to_string(services) + " `sleep 1000` services, " +
                 std::to_string(rounds) + " rounds of " + std::to_string(scrapes) + " scrapes" +
                 (spacing > 0 ? " " + format_number(spacing, 1) + " s apart" : "") +
                 (baseline.empty() ? "" : ", alternating with the baseline"));
    for (auto& s : subjects) {
        if (!start(*s, services)) {
            print_note(s->label + ": pkitd did not get all services running; no figures");
            return 0;
        }
    }
    std::vector<double> floor;
    for (int r = 0; r < rounds; ++r) {
        for (auto& s : subjects) {
            round(*s, scrapes, services, spacing);
        }
        floor.push_back(bare_proc_pass());
    }
    for (auto& s : subjects) {
        report(*s);
    }
    print_row("the kernel's floor: a bare pass over /proc/*/stat",
              format_number(median(floor) * 1e3, 2), "ms", "", "one thread, no pkitd", "");
    for (auto& s : subjects) {
        s->pkitd->stop();
    }
    return 0;
}
