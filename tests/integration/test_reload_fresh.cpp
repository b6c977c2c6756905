// Reload of a changed service resets ALL its counters (SPEC §8: "restarted with the new
// definition and fresh counters (`restarts`, `storm_pauses`, `liveness_kills`,
// windows; `run` keeps counting)"), even when only a key besides `command` changed:
// the fresh run's restarts, storm_pauses and liveness_kills are 0, and what the old
// counters drove (max_restarts, the storm score, the backoff step) starts over.

#include <string>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

json wait_healthy_run(Client& client, const std::string& name, int run) {
    return wait_status(
        client, name,
        [run](const json& s) {
            return s["state"] == "running" && s.value("run", 0) == run && s["health"].is_object() &&
                   s["health"]["status"] == "healthy";
        },
        15s, name + " healthy in its run " + std::to_string(run));
}

// Three restarts allowed; two quick crashes trip the storm guard; one failed liveness
// probe kills. `stop_timeout` is the key the reload changes.
std::string svc_toml(const std::string& flag, const std::string& stop_timeout) {
    return sh_command("exec sleep 1000") +
           "[restart]\npolicy = \"on_crash\"\nbackoff_initial = \"300ms\"\nbackoff_factor = 2.0\n"
           "max_restarts = 3\njitter = false\n"
           "[storm]\nthreshold = 1.5\ndecay = \"60s\"\npause = \"500ms\"\n"
           "[health]\nexec = [\"test\", \"-f\", " +
           toml_str(flag) +
           "]\ninterval = \"100ms\"\nfailures = 1\n"
           "[stop]\ntimeout = " +
           toml_str(stop_timeout) + "\n";
}

}  // namespace

TEST_CASE("reload of a changed stop timeout resets restarts, storm_pauses and liveness_kills") {
    TempDir dir;
    const std::string flag = dir.file("healthy");
    write_file(flag, "");
    dir.service("svc", svc_toml(flag, "1s"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_healthy_run(client, "svc", 1);

    // Crash 1: a plain restart. Crash 2: the score reaches 1.5, a storm pause.
    kill_service(client, "svc");
    wait_healthy_run(client, "svc", 2);
    kill_service(client, "svc");
    wait_status(
        client, "svc", [](const json& s) { return s.value("storm_pauses", 0) == 1; }, 10s,
        "a storm pause");
    wait_healthy_run(client, "svc", 3);
    // Crash 3: a liveness kill. The flag is back before the restart's first probe.
    fs::remove(flag);
    wait_status(client, "svc", liveness_killed(1), 10s, "a liveness kill");
    write_file(flag, "");
    json before = wait_healthy_run(client, "svc", 4);
    REQUIRE(before["restarts"] == 3);
    REQUIRE(before["storm_pauses"] == 1);
    REQUIRE(before["liveness_kills"] == 1);

    dir.service("svc", svc_toml(flag, "2s"));
    json result = reload(client);
    CHECK(result["changed"] == json::array({"svc"}));
    json fresh = wait_running(client, "svc", 5);
    CHECK(fresh["pid"] != before["pid"]);
    CHECK(fresh["restarts"] == 0);
    CHECK(fresh["storm_pauses"] == 0);
    CHECK(fresh["liveness_kills"] == 0);
    CHECK_FALSE(pid_alive(before["pid"].get<pid_t>()));

    // What the counters drove starts over too. One crash now: with the old counters it
    // would be restart 4 of 3 (restarts_exhausted), the score would be past 1.5 (a
    // storm pause) and the backoff at a later step. Fresh: the first step, 300ms.
    wait_healthy_run(client, "svc", 5);
    EventStream events(pkitd.socket());
    kill_service(client, "svc");
    json next = events.until(
        [](const json& e) {
            return is_event(e, "restarting", "svc") || is_event(e, "storm_pause", "svc") ||
                   is_event(e, "restarts_exhausted", "svc");
        },
        10s, "the decision after the crash");
    INFO("events: " << json(events.seen()).dump());
    CHECK(next["type"] == "restarting");
    CHECK(next.value("delay", -1.0) == doctest::Approx(0.3));
    CHECK(next.value("restart", 0) == 1);
    json after = wait_running(client, "svc", 6);
    CHECK(after["restarts"] == 1);
    CHECK(after["storm_pauses"] == 0);
    CHECK(after["liveness_kills"] == 0);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("reload of a changed env during a storm pause starts the service afresh") {
    TempDir dir;
    const std::string out = dir.file("env-seen");
    auto toml = [&](const std::string& value) {
        return "env = { MARK = " + toml_str(value) + " }\n" +
               sh_command("echo \"$MARK\" >> " + out + "; exec sleep 1000") +
               "[restart]\nbackoff_initial = \"50ms\"\njitter = false\n"
               "[storm]\nthreshold = 1.5\ndecay = \"60s\"\npause = \"60s\"\n"
               "[stop]\ntimeout = \"1s\"\n";
    };
    dir.service("svc", toml("old"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    // Each run is killed only once it wrote its MARK, so the file holds one line a run.
    auto wait_lines = [&](std::size_t n) {
        wait_for([&] { return read_lines(out).size() == n; }, 10s,
                 std::to_string(n) + " MARK lines", [&] { return read_file(out); });
    };
    wait_running(client, "svc", 1);
    wait_lines(1);
    kill_service(client, "svc");
    wait_running(client, "svc", 2);
    wait_lines(2);
    kill_service(client, "svc");
    json paused = wait_status(client, "svc", state_is("storm_pause"), 10s, "a 60 s storm pause");
    REQUIRE(paused["storm_pauses"] == 1);
    REQUIRE(paused["restarts"] == 2);

    dir.service("svc", toml("new"));
    json result = reload(client);
    CHECK(result["changed"] == json::array({"svc"}));
    // Well before the old pause would end: a fresh run with the new environment.
    json fresh = wait_running(client, "svc", 3);
    CHECK(fresh["restarts"] == 0);
    CHECK(fresh["storm_pauses"] == 0);
    CHECK(fresh["liveness_kills"] == 0);
    wait_lines(3);
    CHECK(read_lines(out) == std::vector<std::string>{"old", "old", "new"});
    CHECK(pkitd.stop() == 0);
}
