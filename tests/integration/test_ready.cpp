// Readiness (SPEC §2 [ready], §3): a run is `starting` until its probe succeeds, a
// dependent with `after` starts only once its dependency is ready, and a run not ready
// by `timeout` is stopped as a crash (killed_by = "ready_timeout").

#include <sys/stat.h>

#include <thread>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// The modification time of `path` in unix seconds.
double mtime(const std::string& path) {
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    return static_cast<double>(st.st_mtim.tv_sec) + static_cast<double>(st.st_mtim.tv_nsec) / 1e9;
}

}  // namespace

TEST_CASE("ready probe: a dependent with after starts only once the dependency is ready") {
    TempDir dir;
    const std::string ready_file = dir.file("db-ready");
    dir.service("db",
                sh_command(gate(dir) + "sleep 0.5; touch " + ready_file + "; exec sleep 1000") +
                    "[ready]\nexec = [\"test\", \"-f\", " + toml_str(ready_file) +
                    "]\ninterval = \"100ms\"\n");
    dir.service("app", "after = [\"db\"]\n" + sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    EventStream events(pkitd.socket());

    json db = status(client, "db");
    CHECK(db["state"] == "starting");
    CHECK(db["ready"] == false);
    CHECK(status(client, "app")["state"] == "waiting");
    open_gate(dir);

    events.until([](const json& e) { return is_event(e, "started", "app"); }, 10s, "app starts");
    int ready_index = -1;
    int started_index = -1;
    const auto& seen = events.seen();
    for (std::size_t i = 0; i < seen.size(); ++i) {
        if (is_event(seen[i], "ready", "db") && ready_index < 0) {
            ready_index = static_cast<int>(i);
        }
        if (is_event(seen[i], "started", "app") && started_index < 0) {
            started_index = static_cast<int>(i);
        }
    }
    INFO("events: " << json(seen).dump());
    CHECK(ready_index >= 0);
    CHECK(ready_index < started_index);

    json app = wait_status(client, "app", state_is("running"), 5s, "app running");
    db = status(client, "db");
    CHECK(db["state"] == "running");
    CHECK(db["ready"] == true);
    // Clocks: the file's mtime and pkitd's started_at are both wall-clock seconds.
    CHECK(app["started_at"].get<double>() >= mtime(ready_file) - 0.01);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("ready timeout: a run never ready is stopped as a crash and restarted") {
    TempDir dir;
    std::string ready;
    SUBCASE("an exec probe that never succeeds") {
        ready = "[ready]\nexec = [\"false\"]\ninterval = \"100ms\"\ntimeout = \"600ms\"\n";
    }
    SUBCASE("notify = true and no READY=1") {
        ready = "[ready]\nnotify = true\ntimeout = \"600ms\"\n";
    }
    dir.service("svc",
                sh_command("exec sleep 1000") + restart_table("on_crash", "100ms", 1.0, 1) + ready);
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();

    json s = wait_status(client, "svc", state_is("failed"), 10s, "two runs time out");
    CHECK(s["stopped"] == "restarts_exhausted");
    CHECK(s["run"] == 2);
    CHECK(s["restarts"] == 1);
    CHECK(s["ready"] == false);
    CHECK(last_exit(s)["killed_by"] == "ready_timeout");
    CHECK(last_exit(s)["signal"] == "SIGTERM");
    CHECK(last_exit(s)["duration"].get<double>() >= 0.55);
    CHECK(last_exit(s)["duration"].get<double>() < 3.0);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("ready probe: liveness probes start only once the run is ready") {
    TempDir dir;
    const std::string ready_file = dir.file("ready");
    // The liveness probe always fails: only the readiness gate holds it back.
    dir.service("svc", sh_command("exec sleep 1000") + restart_table("never", "50ms") +
                           "[ready]\nexec = [\"test\", \"-f\", " + toml_str(ready_file) +
                           "]\ninterval = \"100ms\"\n" +
                           "[health]\nexec = [\"false\"]\ninterval = \"100ms\"\nfailures = 1\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    EventStream events(pkitd.socket());
    // Ten liveness intervals while starting: no probe, no kill.
    const auto deadline = Clock::now() + 1s;
    while (Clock::now() < deadline) {
        json s = status(client, "svc");
        REQUIRE(s["state"] == "starting");
        CHECK(s["liveness_kills"] == 0);
        CHECK(s["health"]["status"] == "unknown");
        std::this_thread::sleep_for(100ms);
    }

    write_file(ready_file, "");
    json s = wait_status(client, "svc", state_is("failed"), 5s, "killed once ready");
    CHECK(s["stopped"] == "unhealthy");
    CHECK(s["liveness_kills"] == 1);
    events.until([](const json& e) { return e.value("type", "") == "liveness_kill"; }, 5s,
                 "liveness_kill");
    int ready_at = -1;
    int kill_at = -1;
    const auto& seen = events.seen();
    for (std::size_t i = 0; i < seen.size(); ++i) {
        if (seen[i].value("type", "") == "ready") {
            ready_at = static_cast<int>(i);
        } else if (seen[i].value("type", "") == "liveness_kill" && kill_at < 0) {
            kill_at = static_cast<int>(i);
        }
    }
    INFO("events: " << json(seen).dump());
    CHECK(ready_at >= 0);
    CHECK(ready_at < kill_at);
    CHECK(pkitd.stop() == 0);
}
