// Restart soak: one `/bin/true` service under `[restart] policy = "always"`,
// `backoff_initial = "0s"` (or --backoff), `jitter = false`, restarted --restarts times.
// Every --every restarts pkitd's VmRSS, open fds and zombie children (state Z, parent
// pkitd) are sampled; the first, last and largest of each are printed with a few
// samples along the way, so that "flat" (or a leak) is visible. A figure, never a
// failure: a pkitd that stops answering shows as timeouts and a shortfall in restarts.
//
//   bench_soak_restart --pkitd PATH [--restarts 100000] [--every 1000] [--backoff 0s]
//                      [--timeout 1800]

#include "bench/bench_util.hpp"

namespace {

using namespace pkit::bench;

struct Sample {
    long run = 0;
    double at = 0.0;  // seconds since the first sample
    long rss_kib = -1;
    long fds = -1;
    long zombies = -1;
};

// The `run` counter of `spin`, or -1 (a timeout reconnects the client).
long read_run(Pkitd& pkitd, Client& client, long& timeouts) {
    if (!client.connected() && !pkitd.connect(client, 5.0)) {
        return -1;
    }
    json services =
        services_of(client.request_json(R"({"id":1,"cmd":"status","services":["spin"]})", 5.0));
    if (services.empty()) {
        if (client.timed_out()) {
            ++timeouts;
        }
        return -1;
    }
    return services[0].value("run", -1L);
}

void print_series(const std::string& what, const std::vector<Sample>& samples, long Sample::*field,
                  const std::string& unit) {
    long first = samples.front().*field;
    long last = samples.back().*field;
    long most = first;
    for (const auto& s : samples) {
        most = std::max(most, s.*field);
    }
    print_row(what + " first / last / max",
              std::to_string(first) + " / " + std::to_string(last) + " / " + std::to_string(most),
              unit, "flat", "last-first " + std::to_string(last - first), "");
}

}  // namespace

int main(int argc, char** argv) {
    std::string binary = arg(argc, argv, "--pkitd", "");
    auto restarts = static_cast<long>(arg_number(argc, argv, "--restarts", 100000));
    auto every = std::max(1L, static_cast<long>(arg_number(argc, argv, "--every", 1000)));
    std::string backoff = arg(argc, argv, "--backoff", "0s");
    double timeout = arg_number(argc, argv, "--timeout", 1800);
    if (binary.empty()) {
        std::fprintf(stderr,
                     "usage: bench_soak_restart --pkitd PATH [--restarts N] "
                     "[--every N] [--backoff DURATION] [--timeout SECONDS]\n");
        return 2;
    }

    TempDir dir("pkit-bench-soak");
    dir.write("services/spin.toml",
              "command = [\"/bin/true\"]\n[restart]\npolicy = \"always\"\nbackoff_initial = \"" +
                  backoff + "\"\njitter = false\n[output]\nforward = \"none\"\n");
    Pkitd pkitd(binary, dir.path());
    Client client;
    print_header("restart soak: " + std::to_string(restarts) + " restarts of /bin/true, backoff " +
                 backoff + ", sampled every " + std::to_string(every));
    if (!pkitd.start() || !pkitd.connect(client)) {
        print_note("pkitd did not start or answer");
        return 0;
    }

    std::vector<Sample> samples;
    long timeouts = 0;
    long next = 1;  // the first sample right away, at whatever run is current
    long run = 0;
    double begin = mono_seconds();
    double cpu_begin = cpu_seconds(pkitd.pid());
    double deadline = begin + timeout;
    while (mono_seconds() < deadline && pkitd.alive()) {
        long now = read_run(pkitd, client, timeouts);
        if (now >= 0) {
            run = now;
        }
        if (now >= next) {
            Sample s;
            s.run = now;
            s.at = mono_seconds() - begin;
            s.rss_kib = read_memory(pkitd.pid()).rss_kib;
            s.fds = count_fds(pkitd.pid());
            s.zombies = count_zombies(pkitd.pid());
            samples.push_back(s);
            next = samples.size() == 1 ? now + every : next + every;
            while (next <= now) {
                next += every;
            }
        }
        if (run >= restarts + 1) {
            break;
        }
        sleep_seconds(0.01);
    }
    double wall = mono_seconds() - begin;
    double cpu = cpu_seconds(pkitd.pid()) - cpu_begin;
    bool alive = pkitd.alive();
    double stop_took = pkitd.stop(30.0);

    if (samples.size() < 2) {
        print_note("fewer than two samples (run counter " + std::to_string(run) + ", " +
                   std::to_string(timeouts) + " status timeouts, pkitd " +
                   (alive ? "alive" : "gone") + ")");
        return 0;
    }
    long done = samples.back().run - samples.front().run;
    print_row("restarts sampled over", std::to_string(done), "runs", std::to_string(restarts),
              format_number(wall, 1) + " s wall", run >= restarts + 1 ? "" : "timeout");
    double span = samples.back().at - samples.front().at;
    print_row("restart rate", format_number(static_cast<double>(done) / span, 0), "runs/s", "",
              "over " + format_number(span, 1) + " s", "");
    print_row("pkitd CPU per restart", format_number(cpu / static_cast<double>(done) * 1e3, 3),
              "ms", "", format_number(100.0 * cpu / wall, 1) + "% of a core", "");
    print_series("VmRSS", samples, &Sample::rss_kib, "KiB");
    print_series("open fds", samples, &Sample::fds, "fds");
    print_series("zombie children", samples, &Sample::zombies, "procs");
    print_row("status timeouts (5 s each)", std::to_string(timeouts), "", "0", "", "");
    print_row("SIGTERM -> exit", format_number(stop_took * 1e3, 1), "ms", "",
              "exit code " + std::to_string(pkitd.exit_code()), alive ? "" : "pkitd died");
    // Ten samples along the way (and the last), to show the shape.
    std::size_t stride = std::max<std::size_t>(1, samples.size() / 10);
    for (std::size_t i = 0; i < samples.size(); i += stride) {
        const Sample& s = samples[i];
        print_note("run " + std::to_string(s.run) + " at " + format_number(s.at, 1) + " s: VmRSS " +
                   std::to_string(s.rss_kib) + " KiB, " + std::to_string(s.fds) + " fds, " +
                   std::to_string(s.zombies) + " zombies");
    }
    const Sample& s = samples.back();
    print_note("last: run " + std::to_string(s.run) + " at " + format_number(s.at, 1) +
               " s: VmRSS " + std::to_string(s.rss_kib) + " KiB, " + std::to_string(s.fds) +
               " fds, " + std::to_string(s.zombies) + " zombies");
    return 0;
}
