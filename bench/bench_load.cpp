// `status` under load, and what the load costs pkitd. Each scenario starts its own
// pkitd, then times `pkitctl status` (the whole program, its own start included) and
// the raw status round trip on one connection, alternately, for --calls rounds or
// --max-seconds, whichever ends first; pkitd's CPU share over that window (utime +
// stime delta / wall) and the most zombie children seen. Every request has a timeout:
// a starved pkitd shows as "timeout" figures, never as a hang.
//
//   crashloop       --services (100) services `/bin/false`, policy on_crash, backoff
//                   "0s", jitter false; then SIGTERM -> exit time and exit code
//   crashloop-true  the same with `/bin/true`, policy always (crash storm)
//   storm           50 such services under the daemon-wide guard ([storm] pause 5s,
//                   threshold 20): CPU share from pkitd's start over 6 s, runs made
//                   (was the ctest case "storm: the daemon-wide guard keeps 50...")
//   probes-refused  100 `sleep` services each probed over http every 1 s at a port
//   probes-silent   that refuses / that never answers (was test_health_load.cpp's
//                   "status stays fast" bounds)
//   forward         one service writing --rate MB/s (50) of --line-bytes (100) lines,
//                   with forward = "prefix", "raw" and "none", pkitd's stdout a FIFO the
//                   bench reads: MB/s the writer got through, status p50/p99, CPU share
//
//   bench_load --pkitd PATH --pkitctl PATH [--scenario all|crashloop|crashloop-true|
//              storm|probes-refused|probes-silent|forward] [--services 100] [--calls 300]
//              [--max-seconds 60] [--rate 50] [--line-bytes 100]

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "bench/bench_util.hpp"

namespace {

using namespace pkit::bench;

struct Window {
    std::vector<double> ctl;  // seconds per `pkitctl status`
    std::vector<double> raw;  // seconds per raw status round trip
    long ctl_failures = 0;    // timed out, failed, or printed no service
    long raw_timeouts = 0;
    long zombies_max = 0;
    double wall = 0.0;
    double cpu = NAN;
    json last_reply;
};

// Alternates `pkitctl status` and a raw status request until `calls` of each or
// `max_seconds`; `pause` seconds between rounds.
Window measure(Pkitd& pkitd, const std::string& pkitctl, const TempDir& dir, long calls,
               double max_seconds, double pause, const std::string& expect) {
    Window w;
    Client client;
    double begin = mono_seconds();
    double cpu_begin = cpu_seconds(pkitd.pid());
    std::string out = dir.file("ctl.out");
    for (long i = 0; i < calls && mono_seconds() - begin < max_seconds && pkitd.alive(); ++i) {
        if (!pkitctl.empty()) {
            ProgramRun ctl =
                run_program({pkitctl, "--socket", pkitd.socket_path(), "status"}, 10.0, out);
            if (ctl.exit_code == 0 && read_text(out).find(expect) != std::string::npos) {
                w.ctl.push_back(ctl.seconds);
            } else {
                ++w.ctl_failures;
            }
        }
        if (!client.connected() && !pkitd.connect(client, 5.0)) {
            ++w.raw_timeouts;
            continue;
        }
        double asked = mono_seconds();
        json reply = client.request_json(R"({"id":1,"cmd":"status"})", 5.0);
        if (reply.is_object() && reply.value("ok", false)) {
            w.raw.push_back(mono_seconds() - asked);
            w.last_reply = reply;
        } else {
            ++w.raw_timeouts;
        }
        w.zombies_max = std::max(w.zombies_max, count_zombies(pkitd.pid()));
        sleep_seconds(pause);
    }
    w.wall = mono_seconds() - begin;
    w.cpu = cpu_seconds(pkitd.pid()) - cpu_begin;
    return w;
}

void print_window(const Window& w, bool with_ctl) {
    if (with_ctl) {
        print_row(
            "`pkitctl status` p50 / p99",
            format_number(percentile(w.ctl, 0.5) * 1e3, 1) + " / " +
                format_number(percentile(w.ctl, 0.99) * 1e3, 1),
            "ms", "",
            std::to_string(w.ctl.size()) + " ok, " + std::to_string(w.ctl_failures) + " failed",
            w.ctl_failures > 0 ? "timeouts" : "");
    }
    print_row("raw status round trip p50 / p99 / max",
              format_number(percentile(w.raw, 0.5) * 1e3, 2) + " / " +
                  format_number(percentile(w.raw, 0.99) * 1e3, 2) + " / " +
                  format_number(percentile(w.raw, 1.0) * 1e3, 1),
              "ms", "",
              std::to_string(w.raw.size()) + " ok, " + std::to_string(w.raw_timeouts) + " t/o",
              w.raw_timeouts > 0 ? "timeouts" : "");
    print_row("pkitd CPU share over the window", format_number(100.0 * w.cpu / w.wall, 1), "% core",
              "", format_number(w.cpu, 2) + " s / " + format_number(w.wall, 1) + " s", "");
    print_row("zombie children, most seen", std::to_string(w.zombies_max), "procs", "", "", "");
}

long total_runs(const json& reply) {
    long runs = 0;
    for (const auto& s : services_of(reply)) {
        runs += s.value("run", 0L);
    }
    return runs;
}

void crashloop(const std::string& binary, const std::string& pkitctl, long services, long calls,
               double max_seconds, bool true_always = false) {
    TempDir dir("pkit-bench-load");
    std::string service = true_always
                              ? "command = [\"/bin/true\"]\n[restart]\npolicy = \"always\"\n"
                              : "command = [\"/bin/false\"]\n[restart]\npolicy = \"on_crash\"\n";
    service += "backoff_initial = \"0s\"\njitter = false\n";
    for (long i = 0; i < services; ++i) {
        dir.write("services/" + service_name(static_cast<std::size_t>(i)) + ".toml", service);
    }
    print_header(std::to_string(services) + " services " +
                 (true_always ? "`/bin/true`, always," : "`/bin/false`,") +
                 " crash-looping at zero backoff");
    Pkitd pkitd(binary, dir.path());
    Client client;
    if (!pkitd.start() || !pkitd.connect(client)) {
        print_note("pkitd did not start or answer");
        return;
    }
    sleep_seconds(1.0);  // the loop is under way
    Window w = measure(pkitd, pkitctl, dir, calls, max_seconds, 0.0, service_name(0));
    print_window(w, !pkitctl.empty());
    print_row("runs made by the end of the window", std::to_string(total_runs(w.last_reply)),
              "runs", "", "", "");
    bool alive = pkitd.alive();
    double took = pkitd.stop(30.0);
    print_row("SIGTERM -> exit", std::isnan(took) ? "timeout" : format_number(took * 1e3, 1), "ms",
              "(30 s grace)", "exit code " + std::to_string(pkitd.exit_code()),
              alive ? "" : "pkitd died");
}

void storm(const std::string& binary, const std::string& pkitctl) {
    TempDir dir("pkit-bench-load");
    dir.write("pkitd.toml", "[storm]\npause = \"5s\"\nthreshold = 20\ndecay = \"60s\"\n");
    for (int i = 0; i < 50; ++i) {
        dir.write("services/" + service_name(static_cast<std::size_t>(i)) + ".toml",
                  "command = [\"/bin/false\"]\n[restart]\npolicy = \"on_crash\"\n"
                  "backoff_initial = \"0s\"\njitter = false\n");
    }
    print_header("50 services crash-looping under the daemon-wide storm guard (6 s from start)");
    Pkitd pkitd(binary, dir.path());
    Client client;
    if (!pkitd.start() || !pkitd.connect(client)) {
        print_note("pkitd did not start or answer");
        return;
    }
    // The window starts at pkitd's fork: the first burst, the guard, the pause.
    double left = 6.0 - (mono_seconds() - pkitd.started_at());
    Window w = measure(pkitd, pkitctl, dir, 1000000, left, 0.2, service_name(49));
    w.cpu = cpu_seconds(pkitd.pid());
    w.wall = mono_seconds() - pkitd.started_at();
    print_window(w, !pkitctl.empty());
    json daemon = w.last_reply.is_object() ? w.last_reply["result"].value("daemon", json::object())
                                           : json::object();
    print_row("runs made in the window", std::to_string(total_runs(w.last_reply)), "runs",
              "(guard holds)", "storm_pauses " + daemon.value("storm_pauses", json(-1)).dump(), "");
}

// A TCP port on 127.0.0.1 that refuses (bound, not listening) or, after listen(),
// completes connections into its backlog and never answers.
class Port {
public:
    explicit Port(bool listening) {
        m_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof addr;
        ::bind(m_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
        ::getsockname(m_fd, reinterpret_cast<sockaddr*>(&addr), &len);
        m_port = ntohs(addr.sin_port);
        if (listening) {
            ::listen(m_fd, 4096);
        }
    }
    ~Port() { ::close(m_fd); }
    Port(const Port&) = delete;
    Port& operator=(const Port&) = delete;
    int port() const { return m_port; }

private:
    int m_fd = -1;
    int m_port = 0;
};

void probes(const std::string& binary, const std::string& pkitctl, bool silent) {
    Port port(silent);
    TempDir dir("pkit-bench-load");
    std::string url = "http://127.0.0.1:" + std::to_string(port.port()) + "/healthz";
    for (int i = 0; i < 100; ++i) {
        dir.write("services/" + service_name(static_cast<std::size_t>(i)) + ".toml",
                  "command = [\"/bin/sleep\", \"1000\"]\n[health]\nhttp = \"" + url +
                      "\"\ninterval = \"1s\"\nfailures = 1000\n");
    }
    print_header(std::string("100 services probed over http every 1 s, ") +
                 (silent ? "to a listener that never answers" : "to a port that refuses"));
    Pkitd pkitd(binary, dir.path());
    Client client;
    if (!pkitd.start() || !pkitd.connect(client)) {
        print_note("pkitd did not start or answer");
        return;
    }
    double until = mono_seconds() + 30.0;
    bool probed = false;
    while (!probed && mono_seconds() < until) {
        json services = services_of(client.request_json(R"({"id":1,"cmd":"status"})", 5.0));
        probed = services.size() == 100 &&
                 std::all_of(services.begin(), services.end(), [](const json& s) {
                     return s.contains("health") && s["health"].is_object() &&
                            s["health"].value("failures", 0) >= 1;
                 });
        if (!client.connected()) {
            pkitd.connect(client, 5.0);
        }
        sleep_seconds(0.1);
    }
    if (!probed) {
        print_note("not every service was probed within 30 s; measuring anyway");
    }
    Window w = measure(pkitd, pkitctl, dir, 1000000, 5.0, 0.1, service_name(0));
    print_window(w, !pkitctl.empty());
}

// The writer service (this program, --writer): `rate` bytes a second of `line_bytes`
// lines (newline included) to stdout, blocking when pkitd does not keep up; every
// 50 ms its total so far goes to `progress`, read by the bench.
int writer(double rate, long line_bytes, const std::string& progress) {
    std::string line(static_cast<std::size_t>(std::max(1L, line_bytes) - 1), 'x');
    line.push_back('\n');
    std::string chunk;
    while (chunk.size() < 64 * 1024) {
        chunk += line;
    }
    double begin = mono_seconds();
    double reported = 0.0;
    double total = 0.0;
    for (;;) {
        double due = (mono_seconds() - begin) * rate - total;
        if (due < static_cast<double>(line.size())) {
            sleep_seconds(0.0005);
        } else {
            auto lines =
                std::min(static_cast<std::size_t>(due) / line.size(), chunk.size() / line.size());
            std::size_t size = lines * line.size();
            for (std::size_t done = 0; done < size;) {
                ssize_t n = ::write(1, chunk.data() + done, size - done);
                if (n <= 0) {
                    return 1;
                }
                done += static_cast<std::size_t>(n);
            }
            total += static_cast<double>(size);
        }
        if (mono_seconds() - reported > 0.05) {
            reported = mono_seconds();
            std::string text = std::to_string(static_cast<long long>(total)) + "\n";
            std::string tmp = progress + ".tmp";
            std::ofstream(tmp) << text;
            std::rename(tmp.c_str(), progress.c_str());
        }
    }
}

void forward(const std::string& binary, const std::string& pkitctl, const std::string& self,
             double rate_mb, long line_bytes, long calls, double max_seconds) {
    for (const char* mode : {"prefix", "raw", "none"}) {
        TempDir dir("pkit-bench-load");
        std::string progress = dir.file("progress");
        dir.write("services/flood.toml",
                  "command = [\"" + self + "\", \"--writer\", \"" + format_number(rate_mb, 1) +
                      "\", \"--line-bytes\", \"" + std::to_string(line_bytes) +
                      "\", \"--progress\", \"" + progress + "\"]\n[output]\nforward = \"" + mode +
                      "\"\n");
        // pkitd's stdout is a FIFO this process drains, as a container runtime's log pipe.
        std::string fifo = dir.file("stdout.fifo");
        ::mkfifo(fifo.c_str(), 0600);
        int read_fd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        dir.write("pkitd.sh", "#!/bin/sh\nexec \"" + binary + "\" \"$@\" > \"" + fifo + "\"\n");
        ::chmod(dir.file("pkitd.sh").c_str(), 0755);
        std::atomic<bool> stop{false};
        std::atomic<long long> received{0};
        std::thread drain([&] {
            char buffer[1 << 16];
            while (!stop) {
                pollfd entry{read_fd, POLLIN, 0};
                ::poll(&entry, 1, 50);
                ssize_t n = ::read(read_fd, buffer, sizeof buffer);
                if (n > 0) {
                    received += n;
                }
            }
        });
        print_header("one service writing " + format_number(rate_mb, 0) + " MB/s of " +
                     std::to_string(line_bytes) + "-byte lines, forward = \"" + mode + "\"");
        Pkitd pkitd(dir.file("pkitd.sh"), dir.path());
        Client client;
        if (pkitd.start() && pkitd.connect(client)) {
            sleep_seconds(1.0);  // the flood is under way
            auto written = [&] { return std::atof(read_text(progress).c_str()); };
            double bytes_begin = written();
            long long received_begin = received;
            double begin = mono_seconds();
            Window w = measure(pkitd, pkitctl, dir, calls, max_seconds, 0.05, "flood");
            double seconds = mono_seconds() - begin;
            double through = (written() - bytes_begin) / seconds / 1e6;
            print_row(
                "the writer's bytes through pkitd", format_number(through, 1), "MB/s",
                "(asked " + format_number(rate_mb, 0) + ")",
                format_number(static_cast<double>(received - received_begin) / seconds / 1e6, 1) +
                    " MB/s out of pkitd's stdout",
                "");
            print_window(w, !pkitctl.empty());
        } else {
            print_note("pkitd did not start or answer");
        }
        pkitd.stop();
        stop = true;
        drain.join();
        ::close(read_fd);
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (arg(argc, argv, "--writer", "").size() > 0) {
        return writer(arg_number(argc, argv, "--writer", 50) * 1e6,
                      static_cast<long>(arg_number(argc, argv, "--line-bytes", 100)),
                      arg(argc, argv, "--progress", "/dev/null"));
    }
    std::string binary = arg(argc, argv, "--pkitd", "");
    std::string pkitctl = arg(argc, argv, "--pkitctl", "");
    std::string scenario = arg(argc, argv, "--scenario", "all");
    auto services = static_cast<long>(arg_number(argc, argv, "--services", 100));
    auto calls = static_cast<long>(arg_number(argc, argv, "--calls", 300));
    double max_seconds = arg_number(argc, argv, "--max-seconds", 60);
    if (binary.empty()) {
        std::fprintf(stderr,
                     "usage: bench_load --pkitd PATH [--pkitctl PATH] [--scenario S] "
                     "[--services N] [--calls N] [--max-seconds S]\n");
        return 2;
    }
    if (pkitctl.empty()) {
        print_note("no --pkitctl: only the raw status round trip is timed");
    }
    bool all = scenario == "all";
    if (all || scenario == "crashloop") {
        crashloop(binary, pkitctl, services, calls, max_seconds);
    }
    if (all || scenario == "crashloop-true") {
        crashloop(binary, pkitctl, services, calls, max_seconds, true);
    }
    if (all || scenario == "storm") {
        storm(binary, pkitctl);
    }
    if (all || scenario == "probes-refused") {
        probes(binary, pkitctl, false);
    }
    if (all || scenario == "probes-silent") {
        probes(binary, pkitctl, true);
    }
    if (all || scenario == "forward") {
        std::string self = std::filesystem::canonical("/proc/self/exe").string();
        forward(binary, pkitctl, self, arg_number(argc, argv, "--rate", 50),
                static_cast<long>(arg_number(argc, argv, "--line-bytes", 100)), calls,
                std::min(max_seconds, 10.0));
    }
    return 0;
}
