// Backoff (SPEC §3): with jitter off the n-th consecutive restart waits
// min(backoff_initial × factor^n, max_backoff); a run lasting reset_after or longer
// resets n. Gaps are measured from pkitd's own `exited`/`started` event times and must
// be within ±30% of the formula: the `started` event carries the launch time, so a
// gap is the delay plus the timer's latency, not the fork and exec.

#include <cmath>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// Every gap within [0.7 × expected, 1.3 × expected]; every announced delay within 5%
// of expected. Steps start at 200 ms so that 30% leaves a loaded machine 60 ms.
void check_gaps(const EventStream& events, const std::vector<double>& expected) {
    const auto gaps = exit_to_start_gaps(events.seen(), "svc");
    const auto delays = restart_delays(events.seen(), "svc");
    INFO("expected " << to_string(expected) << ", observed gaps " << to_string(gaps)
                     << ", announced delays " << to_string(delays));
    REQUIRE(gaps.size() == expected.size());
    REQUIRE(delays.size() == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
        CHECK(gaps[i] >= 0.7 * expected[i]);
        CHECK(gaps[i] <= 1.3 * expected[i]);
        CHECK(std::abs(delays[i] - expected[i]) <= 0.05 * expected[i]);
    }
}

bool supervision_ended(const json& e) {
    const std::string type = e.value("type", "");
    return type == "restarts_exhausted" || type == "gave_up";
}

}  // namespace

TEST_CASE("with jitter off, restart delays follow backoff_initial × factor^n") {
    TempDir dir;
    // The first run waits for the gate, so that every exit is seen on the stream.
    dir.service("svc",
                sh_command(gate(dir) + "exit 1") + restart_table("on_crash", "200ms", 2.0, 3));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    EventStream events(pkitd.socket());
    open_gate(dir);

    events.until(supervision_ended, 10s, "restarts_exhausted after 4 runs");
    check_gaps(events, {0.2, 0.4, 0.8});
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("max_backoff caps the restart delay") {
    TempDir dir;
    dir.service("svc", sh_command(gate(dir) + "exit 1") +
                           restart_table("on_crash", "200ms", 3.0, 3) +
                           "max_backoff = \"400ms\"\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    EventStream events(pkitd.socket());
    open_gate(dir);

    events.until(supervision_ended, 10s, "restarts_exhausted after 4 runs");
    check_gaps(events, {0.2, 0.4, 0.4});
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("a run lasting reset_after or longer resets the backoff to its first step") {
    TempDir dir;
    const std::string command = sh_command(gate(dir) + "sleep 0.4; exit 1");
    SUBCASE("runs of 0.4 s with reset_after 300ms: every delay is backoff_initial") {
        dir.service("svc", command + restart_table("on_crash", "200ms", 2.0, 3) +
                               "reset_after = \"300ms\"\n");
        Daemon pkitd(dir);
        pkitd.wait_ready();
        EventStream events(pkitd.socket());
        open_gate(dir);
        events.until(supervision_ended, 10s, "restarts_exhausted after 4 runs");
        check_gaps(events, {0.2, 0.2, 0.2});
        CHECK(pkitd.stop() == 0);
    }
    SUBCASE("the same runs with reset_after 3s: the delay doubles") {
        dir.service(
            "svc", command + restart_table("on_crash", "200ms", 2.0, 3) + "reset_after = \"3s\"\n");
        Daemon pkitd(dir);
        pkitd.wait_ready();
        EventStream events(pkitd.socket());
        open_gate(dir);
        events.until(supervision_ended, 10s, "restarts_exhausted after 4 runs");
        check_gaps(events, {0.2, 0.4, 0.8});
        CHECK(pkitd.stop() == 0);
    }
}
