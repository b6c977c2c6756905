// Big trees: reloading them, and how long a reload holds the event loop.
//
//   1. --big (10,000) `sleep` services: time until all run, then `reload` with nothing
//      changed and with one file changed: the round trip, and the longest ping (from
//      another connection, one every ms) that overlapped it.
//   2. --chain (10,000) services, each `after` the one before: `pkitd --check` time,
//      then pkitd's time to answer a ping and to have all of them running.
//   3. --loop (1,000) services: `reload` with nothing changed, and with every file
//      changed (all restart): the longest ping overlapping each reload, i.e. how long
//      the reload blocks the loop.
// Every wait has a timeout (--timeout, 300 s): a figure that did not come is printed
// as "timeout"; pkitd is always killed at the end.
//
//   bench_reload --pkitd PATH [--big 10000] [--chain 10000] [--loop 1000]
//                [--timeout 300] [--phases big,chain,loop]

#include "bench/bench_util.hpp"

namespace {

using namespace pkit::bench;

std::string sleeper(const std::string& arg, const std::string& after) {
    std::string toml = "command = [\"/bin/sleep\", \"" + arg + "\"]\n";
    if (!after.empty()) {
        toml += "after = [\"" + after + "\"]\n";
    }
    return toml + "[stop]\ntimeout = \"2s\"\n";
}

void write_tree(const TempDir& dir, long count, const std::string& arg, bool chained) {
    for (long i = 0; i < count; ++i) {
        auto n = static_cast<std::size_t>(i);
        dir.write("services/" + service_name(n) + ".toml",
                  sleeper(arg, chained && i > 0 ? service_name(n - 1) : ""));
    }
}

std::string ms_or_timeout(std::optional<double> seconds) {
    return seconds ? format_number(*seconds * 1e3, 1) : "timeout";
}

// The longest ping whose flight overlapped [from, to] (a timeout counts as 2 s).
double longest_overlapping(PingSampler& pings, double from, double to) {
    double worst = 0.0;
    for (const auto& s : pings.samples(from - 5.0, to)) {
        double latency = std::isnan(s.latency) ? 2.0 : s.latency;
        if (s.sent_at + latency >= from) {
            worst = std::max(worst, latency);
        }
    }
    return worst;
}

struct ReloadFigure {
    std::optional<double> took;  // the reload round trip
    double ping_max = 0.0;
    std::string result;  // added/removed/changed/unchanged counts
};

ReloadFigure timed_reload(Pkitd& pkitd, PingSampler& pings, double timeout) {
    ReloadFigure f;
    Client client;
    if (!pkitd.connect(client, 5.0)) {
        return f;
    }
    double begin = mono_seconds();
    json reply = client.request_json(R"({"id":1,"cmd":"reload"})", timeout);
    double end = mono_seconds();
    if (reply.is_object() && reply.value("ok", false)) {
        f.took = end - begin;
        const json& r = reply["result"];
        f.result = "changed " + std::to_string(r.value("changed", json::array()).size()) +
                   ", unchanged " + r.value("unchanged", json(0)).dump();
    } else {
        f.result = client.timed_out() ? "timeout" : "failed: " + reply.dump().substr(0, 120);
    }
    sleep_seconds(0.05);  // the ping in flight lands
    f.ping_max = longest_overlapping(pings, begin, end);
    return f;
}

void print_reload(const std::string& what, const ReloadFigure& f) {
    print_row(what + ": reload round trip", ms_or_timeout(f.took), "ms", "", f.result, "");
    print_row(what + ": longest ping overlapping it", format_number(f.ping_max * 1e3, 1), "ms", "",
              "", "");
}

// Starts pkitd on `dir` and waits for `count` running; prints the figures.
bool start_all(Pkitd& pkitd, long count, double timeout, const std::string& label) {
    Client client;
    if (!pkitd.start() || !pkitd.connect(client, timeout)) {
        print_row(label + ": socket answering", "timeout", "ms", "", "", "");
        return false;
    }
    std::optional<double> answered;
    if (client.request_json(R"({"id":1,"cmd":"ping"})", timeout).is_object()) {
        answered = mono_seconds() - pkitd.started_at();
    }
    print_row(label + ": first ping answered", ms_or_timeout(answered), "ms", "", "", "");
    std::optional<double> running;
    double until = mono_seconds() + timeout;
    while (!running && mono_seconds() < until && pkitd.alive()) {
        if (!client.connected() && !pkitd.connect(client, 5.0)) {
            continue;
        }
        json services = services_of(client.request_json(R"({"id":1,"cmd":"status"})", 30.0));
        if (count_state(services, "running") >= static_cast<std::size_t>(count)) {
            running = mono_seconds() - pkitd.started_at();
        } else {
            sleep_seconds(0.5);
        }
    }
    print_row(label + ": all running", ms_or_timeout(running), "ms", "",
              "VmRSS " + std::to_string(read_memory(pkitd.pid()).rss_kib) + " KiB", "");
    return running.has_value();
}

void big(const std::string& binary, long count, double timeout) {
    TempDir dir("pkit-bench-reload");
    write_tree(dir, count, "100000", false);
    print_header("reload of " + std::to_string(count) + " services");
    Pkitd pkitd(binary, dir.path());
    std::string label = std::to_string(count) + " services";
    if (!start_all(pkitd, count, timeout, label)) {
        pkitd.stop(60.0);
        return;
    }
    PingSampler pings(pkitd.socket_path(), 0.001, 2.0);
    pings.start();
    print_reload("nothing changed", timed_reload(pkitd, pings, timeout));
    dir.write("services/" + service_name(0) + ".toml", sleeper("100001", ""));
    print_reload("one file changed", timed_reload(pkitd, pings, timeout));
    pings.stop();
    double took = pkitd.stop(60.0);
    print_row("SIGTERM -> exit", std::isnan(took) ? "timeout" : format_number(took * 1e3, 1), "ms",
              "(60 s grace)", "exit code " + std::to_string(pkitd.exit_code()), "");
}

void chain(const std::string& binary, long count, double timeout) {
    TempDir dir("pkit-bench-reload");
    write_tree(dir, count, "100000", true);
    print_header(std::to_string(count) + " services in one `after` chain");
    ProgramRun check = run_program({binary, "--check", "--config", dir.path()}, timeout);
    print_row("pkitd --check", check.timed_out ? "timeout" : format_number(check.seconds * 1e3, 1),
              "ms", "", "exit code " + std::to_string(check.exit_code), "");
    Pkitd pkitd(binary, dir.path());
    start_all(pkitd, count, timeout, "chain");
    double took = pkitd.stop(60.0);
    print_row("SIGTERM -> exit", std::isnan(took) ? "timeout" : format_number(took * 1e3, 1), "ms",
              "(60 s grace)", "exit code " + std::to_string(pkitd.exit_code()), "");
}

void loop(const std::string& binary, long count, double timeout) {
    TempDir dir("pkit-bench-reload");
    write_tree(dir, count, "100000", false);
    print_header("how long a reload of " + std::to_string(count) + " services holds the loop");
    Pkitd pkitd(binary, dir.path());
    if (!start_all(pkitd, count, timeout, std::to_string(count) + " services")) {
        pkitd.stop(60.0);
        return;
    }
    PingSampler pings(pkitd.socket_path(), 0.001, 2.0);
    pings.start();
    sleep_seconds(0.5);
    print_row("ping beside it, before any reload", "", "", "", pings.summary(), "");
    print_reload("nothing changed", timed_reload(pkitd, pings, timeout));
    write_tree(dir, count, "100001", false);
    print_reload("every file changed", timed_reload(pkitd, pings, timeout));
    pings.stop();
    pkitd.stop(60.0);
}

}  // namespace

int main(int argc, char** argv) {
    std::string binary = arg(argc, argv, "--pkitd", "");
    auto big_count = static_cast<long>(arg_number(argc, argv, "--big", 10000));
    auto chain_count = static_cast<long>(arg_number(argc, argv, "--chain", 10000));
    auto loop_count = static_cast<long>(arg_number(argc, argv, "--loop", 1000));
    double timeout = arg_number(argc, argv, "--timeout", 300);
    std::string phases = arg(argc, argv, "--phases", "big,chain,loop");
    if (binary.empty()) {
        std::fprintf(stderr,
                     "usage: bench_reload --pkitd PATH [--big N] [--chain N] [--loop N] "
                     "[--timeout S] [--phases big,chain,loop]\n");
        return 2;
    }
    if (phases.find("big") != std::string::npos) {
        big(binary, big_count, timeout);
    }
    if (phases.find("chain") != std::string::npos) {
        chain(binary, chain_count, timeout);
    }
    if (phases.find("loop") != std::string::npos) {
        loop(binary, loop_count, timeout);
    }
    return 0;
}
