// Restart latency with zero backoff: runs per second of a `/bin/true` service under
// `[restart] policy = "always"`, `backoff_initial = 0`, `jitter = false`, against a bare
// fork + execv + waitpid loop of the same command in this process. Rounds alternate
// between the two so that both see the same machine load.
//
// With `--beside N`, pkitd also supervises N idle `sleep 1000` services, which shows
// what the per-run cost owes to pkitd's size (fork copies its page tables) and to the
// work done per event over all services.
//
//   bench_restart --pkitd PATH [--seconds 2] [--rounds 5] [--command /bin/true]
//                 [--beside N]

#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench_util.hpp"

namespace {

using namespace pkit::bench;

// Seconds per run of the bare loop, over `seconds` of wall time.
double bare_loop(const std::string& command, double seconds) {
    std::size_t runs = 0;
    double begin = mono_seconds();
    double elapsed = 0.0;
    while ((elapsed = mono_seconds() - begin) < seconds) {
        pid_t pid = ::fork();
        if (pid == 0) {
            ::execl(command.c_str(), command.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        ++runs;
    }
    return runs == 0 ? NAN : elapsed / static_cast<double>(runs);
}

// The `run` counter of the service `spin`, and the clock halfway through the request.
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

struct PkitdRound {
    double per_run = NAN;      // seconds per run, from the status counter
    double started_gap = NAN;  // median gap between `started` events
};

// Seconds per run through pkitd: the `run` counter's growth over `seconds`, then (with
// an events subscriber, which adds its own cost) the median gap between `started`s.
PkitdRound pkitd_round(const std::string& binary, const std::string& command, double seconds,
                       std::size_t beside) {
    PkitdRound result;
    TempDir dir("pkit-bench-restart");
    for (std::size_t i = 0; i < beside; ++i) {
        dir.write("services/" + service_name(i) + ".toml",
                  "command = [\"/bin/sleep\", \"1000\"]\n");
    }
    dir.write("services/spin.toml", "command = [\"" + command +
                                        "\"]\n[restart]\npolicy = \"always\"\n"
                                        "backoff_initial = 0\njitter = false\n");
    Pkitd pkitd(binary, dir.path());
    Client client;
    if (!pkitd.start() || !pkitd.connect(client)) {
        return result;
    }
    if (beside > 0 && !wait_running(pkitd, client, beside, 60.0)) {
        return result;
    }
    sleep_seconds(0.3);  // past start-up
    auto first = sample_runs(client);
    sleep_seconds(seconds);
    auto last = sample_runs(client);
    if (first && last && last->first > first->first) {
        result.per_run = (last->second - first->second) / (last->first - first->first);
    }

    Client events;
    if (pkitd.connect(events) && events.request(R"({"id":2,"cmd":"events"})")) {
        std::vector<double> starts;
        std::string line;
        double until = mono_seconds() + seconds;
        while (mono_seconds() < until && events.read_line(line)) {
            if (line.find("\"started\"") == std::string::npos) {
                continue;
            }
            json event = json::parse(line, nullptr, false);
            if (!event.is_discarded() && event.contains("event")) {
                starts.push_back(event["event"].value("at", 0.0));
            }
        }
        std::vector<double> gaps;
        for (std::size_t i = 1; i < starts.size(); ++i) {
            gaps.push_back(starts[i] - starts[i - 1]);
        }
        result.started_gap = median(gaps);
    }
    return result;
}

}  // namespace

int main(int argc, char** argv) {
    std::string binary = arg(argc, argv, "--pkitd", "");
    std::string command = arg(argc, argv, "--command", "/bin/true");
    double seconds = arg_number(argc, argv, "--seconds", 2.0);
    int rounds = static_cast<int>(arg_number(argc, argv, "--rounds", 5));
    auto beside = static_cast<std::size_t>(arg_number(argc, argv, "--beside", 0));
    if (binary.empty()) {
        std::fprintf(stderr, "usage: bench_restart --pkitd PATH [--seconds S] [--rounds N]\n");
        return 2;
    }

    std::vector<double> bare;
    std::vector<double> through;
    std::vector<double> gaps;
    for (int r = 0; r < rounds; ++r) {
        bare.push_back(bare_loop(command, seconds));
        PkitdRound round = pkitd_round(binary, command, seconds, beside);
        if (!std::isnan(round.per_run)) {
            through.push_back(round.per_run);
        }
        if (!std::isnan(round.started_gap)) {
            gaps.push_back(round.started_gap);
        }
    }

    std::string also = beside > 0 ? ", " + std::to_string(beside) + " idle services beside" : "";
    print_header("restart latency, zero backoff (" + command + also + ", " +
                 std::to_string(rounds) + " rounds of " + format_number(seconds, 1) + " s)");
    double bare_ms = median(bare) * 1e3;
    double pkitd_ms = median(through) * 1e3;
    double gap_ms = median(gaps) * 1e3;
    print_row("bare fork+exec+waitpid loop", format_number(bare_ms, 3), "ms/run", "(peer)",
              format_number(1e3 / bare_ms, 0) + " runs/s", "");
    if (through.empty()) {
        print_row("pkitd, status `run` counter", "n/a", "ms/run", "<= 1.5x bare", "-", "no figure");
    } else {
        double ratio = pkitd_ms / bare_ms;
        print_row("pkitd, status `run` counter", format_number(pkitd_ms, 3), "ms/run",
                  "<= 1.5x bare", format_number(ratio, 2) + "x bare",
                  ratio <= 1.5 ? "meets" : "misses");
        print_row("  = pkitd runs per second", format_number(1e3 / pkitd_ms, 0), "runs/s",
                  ">= " + format_number(1e3 / bare_ms / 1.5, 0), "", "");
    }
    if (!gaps.empty()) {
        print_row("pkitd, gap between `started` events", format_number(gap_ms, 3), "ms/run",
                  "(with subscriber)", format_number(gap_ms / bare_ms, 2) + "x bare", "");
    }
    return 0;
}
