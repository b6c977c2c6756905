// Scheduled jobs (SPEC §12): the cost of waiting and the precision of a tick.
//
// 1. Idle wakeups: pkitd with N armed jobs (`@yearly`: no tick comes in the window)
//    should sleep in its event loop and wake for nothing, as with no service at all;
//    both are measured side by side (context switches of every pkitd thread over the
//    same window), several rounds, the median shown.
// 2. Tick lateness: one `every 1s` job; each episode's `started` event carries the
//    time its run was launched, and status's `schedule.next` the tick it was due at:
//    lateness = launched - due, over K ticks.
//
//   bench_schedule --pkitd PATH [--jobs 1000] [--seconds 5] [--rounds 3] [--ticks 20]

#include "bench/bench_util.hpp"

namespace {

using namespace pkit::bench;

// pkitd on a tree of `jobs` armed jobs, started and reached; nullopt when it failed.
bool start_armed(Pkitd& pkitd, Client& client, std::size_t jobs) {
    if (!pkitd.start() || !pkitd.connect(client)) {
        return false;
    }
    // Every job scheduled: the status reply lists them all in that state.
    double until = mono_seconds() + 30.0;
    while (mono_seconds() < until) {
        json services = services_of(client.request_json(R"({"id":1,"cmd":"status"})"));
        if (count_state(services, "scheduled") == jobs) {
            return true;
        }
        sleep_seconds(0.1);
    }
    return false;
}

void idle_wakeups(const std::string& binary, std::size_t jobs, double seconds, int rounds) {
    print_header("idle wakeups with " + std::to_string(jobs) + " armed jobs (" +
                 format_number(seconds, 0) + " s windows, " + std::to_string(rounds) +
                 " rounds, side by side with an empty tree)");
    TempDir armed_dir("pkit-bench-sched");
    for (std::size_t i = 0; i < jobs; ++i) {
        armed_dir.write("services/" + service_name(i) + ".toml",
                        "type = \"oneshot\"\nschedule = \"@yearly\"\n"
                        "command = [\"/bin/true\"]\n");
    }
    TempDir empty_dir("pkit-bench-sched-empty");
    empty_dir.write("services/.keep", "");
    Pkitd armed(binary, armed_dir.path());
    Pkitd empty(binary, empty_dir.path());
    Client a;
    Client e;
    if (!start_armed(armed, a, jobs) || !start_armed(empty, e, 0)) {
        print_row("pkitd idle with armed jobs", "n/a", "wakeups", "0", "-",
                  "no figure: pkitd did not arm the jobs");
        return;
    }
    a.close();
    e.close();
    sleep_seconds(1.0);
    std::vector<double> with_jobs;
    std::vector<double> without;
    for (int r = 0; r < rounds; ++r) {
        with_jobs.push_back(static_cast<double>(wakeups_over(armed.pid(), seconds)));
        without.push_back(static_cast<double>(wakeups_over(empty.pid(), seconds)));
    }
    const double m = median(with_jobs);
    const double base = median(without);
    print_row("pkitd idle, " + std::to_string(jobs) + " armed jobs", format_number(m, 0), "wakeups",
              "0", format_number(m / seconds, 2) + "/s", m == 0 ? "meets" : "misses");
    print_row("pkitd idle, no service (same windows)", format_number(base, 0), "wakeups", "0",
              format_number(base / seconds, 2) + "/s", base == 0 ? "meets" : "misses");
}

void tick_lateness(const std::string& binary, int ticks) {
    print_header("tick lateness (`every 1s` job, " + std::to_string(ticks) + " ticks)");
    TempDir dir("pkit-bench-tick");
    dir.write("services/tick.toml",
              "type = \"oneshot\"\nschedule = \"every 1s\"\ncommand = [\"/bin/true\"]\n");
    Pkitd pkitd(binary, dir.path());
    Client client;
    Client events;
    if (!pkitd.start() || !pkitd.connect(client) || !pkitd.connect(events) ||
        !events.request(R"({"id":1,"cmd":"events"})")) {
        print_row("tick lateness", "n/a", "ms", "<= 10 ms", "-", "no figure: pkitd did not start");
        return;
    }
    std::vector<double> late;
    double due = 0;
    auto next_due = [&] {
        json reply = client.request_json(R"({"id":2,"cmd":"status","services":["tick"]})");
        json services = services_of(reply);
        if (services.is_array() && !services.empty() && services[0]["schedule"].is_object() &&
            services[0]["schedule"]["next"].is_number()) {
            return services[0]["schedule"]["next"].get<double>();
        }
        return 0.0;
    };
    due = next_due();
    double until = mono_seconds() + ticks * 1.0 + 10.0;
    std::string line;
    while (static_cast<int>(late.size()) < ticks && mono_seconds() < until &&
           events.read_line(line, 5.0)) {
        json e = json::parse(line, nullptr, false);
        if (e.is_discarded() || !e.contains("event")) {
            continue;
        }
        const json& ev = e["event"];
        if (ev.value("type", "") == "started" && due > 0) {
            late.push_back((ev.value("at", 0.0) - due) * 1000.0);
        }
        if (ev.value("type", "") == "stopped") {
            due = next_due();  // the episode ended: the tick after it
        }
    }
    if (late.empty()) {
        print_row("tick lateness", "n/a", "ms", "<= 10 ms", "-", "no figure: no tick seen");
        return;
    }
    const double m = median(late);
    print_row("tick lateness, median", format_number(m, 2), "ms", "<= 10 ms",
              "p90 " + format_number(percentile(late, 0.9), 2), m <= 10 ? "meets" : "misses");
}

}  // namespace

int main(int argc, char** argv) {
    std::string binary = arg(argc, argv, "--pkitd", "");
    auto jobs = static_cast<std::size_t>(arg_number(argc, argv, "--jobs", 1000));
    double seconds = arg_number(argc, argv, "--seconds", 5.0);
    int rounds = static_cast<int>(arg_number(argc, argv, "--rounds", 3));
    int ticks = static_cast<int>(arg_number(argc, argv, "--ticks", 20));
    if (binary.empty()) {
        std::fprintf(stderr,
                     "usage: bench_schedule --pkitd PATH [--jobs N] [--seconds S] [--rounds R] "
                     "[--ticks K]\n");
        return 2;
    }
    idle_wakeups(binary, jobs, seconds, rounds);
    tick_lateness(binary, ticks);
    return 0;
}
