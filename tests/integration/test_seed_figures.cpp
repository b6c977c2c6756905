// The measured figures pkit was designed from, reproduced end to end: an always-failing
// service with backoff 50 ms .. 1 s restarts 6 times in its first 3 s, and 5 restarts
// allowed in 10 s end supervision on the sixth crash.

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

std::string failing_service(const TempDir& dir, int max_restarts, const std::string& within) {
    return sh_command(gate(dir) + "exit 1") + restart_table("on_crash", "50ms", 2.0, max_restarts) +
           "max_backoff = \"1s\"\nwithin = \"" + within + "\"\n";
}

}  // namespace

TEST_CASE("an always-failing service restarts exactly 6 times in its first 3 s") {
    TempDir dir;
    dir.service("svc", failing_service(dir, -1, "0"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    EventStream events(pkitd.socket());
    open_gate(dir);

    // Time 0 is the first run's exit (its start waited for the gate). Runs start at
    // 0.05, 0.15, 0.35, 0.75, 1.55 and 2.55 s after it; the next one at 3.55 s.
    json first_exit = events.until([](const json& e) { return e.value("type", "") == "exited"; },
                                   5s, "the first exit");
    const double t0 = first_exit.at("at").get<double>();
    events.until([&](const json& e) { return e.value("at", 0.0) >= t0 + 3.2; }, 8s,
                 "an event 3.2 s after the first exit");

    int starts_in_3s = 0;
    int last_run = 0;
    for (const auto& e : events.of_type("started", "svc")) {
        // Run 1's own `started` may reach the stream too (its exec is reported
        // asynchronously): only the restarts after the first exit count.
        const double at = e.at("at").get<double>();
        if (at > t0 && at < t0 + 3.0) {
            ++starts_in_3s;
            last_run = e.at("run").get<int>();
        }
    }
    INFO("delays " << to_string(restart_delays(events.seen(), "svc")) << ", gaps "
                   << to_string(exit_to_start_gaps(events.seen(), "svc")));
    CHECK(starts_in_3s == 6);
    CHECK(last_run == 7);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("with max_restarts 5 within 10 s, supervision ends restarts_exhausted after 6 runs") {
    TempDir dir;
    dir.service("svc", failing_service(dir, 5, "10s"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    open_gate(dir);

    json s = wait_status(client, "svc", state_is("failed"), 10s, "restarts exhausted");
    CHECK(s["stopped"] == "restarts_exhausted");
    CHECK(s["run"] == 6);
    CHECK(s["restarts"] == 5);
    CHECK(pkitd.stop() == 0);
}
