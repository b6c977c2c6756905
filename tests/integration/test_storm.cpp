// The per-service storm guard (SPEC §2 [storm], §3): crashes feed a decaying score;
// the crash that brings it to the threshold waits `pause` instead of the backoff, in
// state storm_pause. Only the service's own crashes count, never operator restarts.

#include <signal.h>

#include <algorithm>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// `pkitctl --json status svc`'s service object.
json ctl_status(const Daemon& pkitd) {
    const auto result = run_ctl({"--socket", pkitd.socket(), "--json", "status", "svc"});
    REQUIRE_MESSAGE(result.exit_code != 4, result.all());
    json parsed = json::parse(result.out, nullptr, false);
    REQUIRE_MESSAGE(parsed.is_object(), result.all());
    REQUIRE(parsed["services"].size() == 1);
    return parsed["services"][0];
}

std::string storm_table(const std::string& threshold, const std::string& decay,
                        const std::string& pause) {
    return "[storm]\nthreshold = " + threshold + "\ndecay = " + toml_str(decay) +
           "\npause = " + toml_str(pause) + "\n";
}

}  // namespace

TEST_CASE("storm: quick crashes reach the threshold and the restart waits pause instead") {
    TempDir dir;
    dir.service("svc", sh_command(gate(dir) + "exit 1") + restart_table("on_crash", "0") +
                           storm_table("3.0", "10s", "2s"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    EventStream events(pkitd.socket());
    open_gate(dir);

    json pause = events.until([](const json& e) { return e.value("type", "") == "storm_pause"; },
                              10s, "storm_pause");
    CHECK(pause["pause"].get<double>() == doctest::Approx(2.0));
    // Crashes land just under a whole number as the score decays between them: the
    // third or the fourth one reaches 3.0, never a later one (10 s half-life).
    json s = ctl_status(pkitd);
    INFO("status: " << s.dump());
    CHECK(s["state"] == "storm_pause");
    CHECK(s["storm_pauses"] == 1);
    CHECK(s["run"].get<int>() >= 3);
    CHECK(s["run"].get<int>() <= 4);
    CHECK(s["next_restart_in"].get<double>() > 0.5);
    CHECK(s["next_restart_in"].get<double>() <= 2.0);

    // The pause is the only wait: the next run starts about 2 s after the crash.
    const int paused_run = s["run"].get<int>();
    events.until(
        [&](const json& e) {
            return e.value("type", "") == "started" && e.value("run", 0) == paused_run + 1;
        },
        10s, "the run after the pause");
    const auto gaps = exit_to_start_gaps(events.seen(), "svc");
    INFO("exit to start gaps: " << to_string(gaps));
    REQUIRE_FALSE(gaps.empty());
    CHECK(gaps.back() >= 1.9);
    CHECK(gaps.back() < 3.5);
    for (std::size_t i = 0; i + 1 < gaps.size(); ++i) {
        CHECK(gaps[i] < 1.0);
    }
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("storm: operator restarts count against neither max_restarts nor the storm score") {
    TempDir dir;
    // Two crashes reach 1.9 (60 s half-life); had the operator restarts counted, the
    // first crash would already trip the guard and exhaust max_restarts.
    dir.service("svc", sh_command("exec sleep 1000") + restart_table("on_crash", "100ms", 1.0, 2) +
                           storm_table("1.9", "60s", "1s"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "svc", state_is("running"), 5s, "run 1");

    for (int i = 0; i < 3; ++i) {
        const auto result = run_ctl({"--socket", pkitd.socket(), "restart", "svc"});
        CHECK_MESSAGE(result.exit_code == 0, result.all());
    }
    json s = wait_status(client, "svc", state_is("running"), 5s, "run 4");
    CHECK(s["run"] == 4);
    CHECK(s["restarts"] == 0);
    CHECK(s["storm_pauses"] == 0);

    auto crash = [&](int run) {
        json current = wait_status(client, "svc", state_is("running"), 5s, "running");
        REQUIRE(current["run"] == run);
        REQUIRE(::kill(current["pid"].get<pid_t>(), SIGKILL) == 0);
    };
    crash(4);
    s = wait_status(client, "svc", run_at_least(5), 5s, "restart after the first crash");
    CHECK(s["restarts"] == 1);
    CHECK(s["storm_pauses"] == 0);

    crash(5);
    s = wait_status(client, "svc", state_is("storm_pause"), 5s, "the second crash trips it");
    CHECK(s["storm_pauses"] == 1);
    CHECK(s["restarts"] == 2);

    crash(6);
    s = wait_status(client, "svc", state_is("failed"), 5s, "the third crash exhausts 2");
    CHECK(s["stopped"] == "restarts_exhausted");
    CHECK(s["restarts"] == 2);
    CHECK(s["run"] == 6);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("storm: crashes spread out beyond the decay never trip the guard") {
    TempDir dir;
    // 100 ms half-life, crashes at least 300 ms apart: each lands at about 1.1.
    dir.service("svc", sh_command("exit 1") + restart_table("on_crash", "300ms", 1.0, 4) +
                           storm_table("1.5", "100ms", "30s"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json s = wait_status(client, "svc", state_is("failed"), 10s, "restarts exhausted");
    CHECK(s["stopped"] == "restarts_exhausted");
    CHECK(s["run"] == 5);
    CHECK(s["storm_pauses"] == 0);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("storm: sub-second pause and decay, seen through pkitctl status --json") {
    TempDir dir;
    // Crashes a few ms apart: the third (or, on a slow machine, the fourth) brings the
    // score to 2.5 and the restart waits 900 ms. max_restarts 5 ends supervision before
    // a second pause could build up (the score starts again from 0 after the pause).
    dir.service("svc", sh_command(gate(dir) + "exit 1") + restart_table("on_crash", "0", 2.0, 5) +
                           storm_table("2.5", "500ms", "900ms"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    EventStream events(pkitd.socket());
    open_gate(dir);

    json pause = events.until([](const json& e) { return e.value("type", "") == "storm_pause"; },
                              10s, "storm_pause");
    CHECK(pause["pause"].get<double>() == doctest::Approx(0.9));
    json s = ctl_status(pkitd);
    INFO("status: " << s.dump());
    CHECK(s["state"] == "storm_pause");
    CHECK(s["storm_pauses"] == 1);
    CHECK(s["next_restart_in"].get<double>() > 0.0);
    CHECK(s["next_restart_in"].get<double>() <= 0.9);

    events.until([](const json& e) { return e.value("type", "") == "restarts_exhausted"; }, 10s,
                 "restarts_exhausted after 6 runs");
    s = ctl_status(pkitd);
    CHECK(s["storm_pauses"] == 1);
    CHECK(s["run"] == 6);
    const auto gaps = exit_to_start_gaps(events.seen(), "svc");
    INFO("exit to start gaps: " << to_string(gaps));
    const auto longest = *std::max_element(gaps.begin(), gaps.end());
    CHECK(longest >= 0.63);  // the pause, within ±30%
    CHECK(longest <= 1.17);
    CHECK(pkitd.stop() == 0);
}
