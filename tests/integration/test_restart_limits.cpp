// Restart limits (SPEC §2 [restart] max_restarts/within, `timeout`): what ends
// supervision with `restarts_exhausted`, and a timed-out run counted as a crash.

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

TEST_CASE("max_restarts counts restarts over the whole life when within is 0") {
    TempDir dir;
    // Runs last 0.3 s: with `within` 0 the spacing of restarts does not matter.
    dir.service("svc", sh_command("sleep 0.3; exit 1") + restart_table("on_crash", "50ms", 1.0, 2));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();

    json s = wait_status(client, "svc", state_is("failed"), 10s, "restarts exhausted");
    CHECK(s["stopped"] == "restarts_exhausted");
    CHECK(s["run"] == 3);
    CHECK(s["restarts"] == 2);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("max_restarts within a window counts only the restarts inside the window") {
    TempDir dir;
    // Restarts are decided about 0.35 s apart (0.3 s run + 50 ms delay).
    const std::string command = sh_command("sleep 0.3; exit 1");
    SUBCASE("a 200 ms window never holds two of them: supervision goes on") {
        dir.service("svc",
                    command + restart_table("on_crash", "50ms", 1.0, 1) + "within = \"200ms\"\n");
        Daemon pkitd(dir);
        pkitd.wait_ready();
        Client client = pkitd.client();
        json s = wait_status(client, "svc", run_at_least(5), 10s,
                             "a fifth run, beyond max_restarts = 1");
        CHECK(s["stopped"].is_null());
        CHECK(s["restarts"].get<int>() >= 4);
        CHECK(pkitd.stop() == 0);
    }
    SUBCASE("a 10 s window holds them all: exhausted after max_restarts + 1 runs") {
        dir.service("svc",
                    command + restart_table("on_crash", "50ms", 1.0, 1) + "within = \"10s\"\n");
        Daemon pkitd(dir);
        pkitd.wait_ready();
        Client client = pkitd.client();
        json s = wait_status(client, "svc", state_is("failed"), 10s, "restarts exhausted");
        CHECK(s["stopped"] == "restarts_exhausted");
        CHECK(s["run"] == 2);
        CHECK(pkitd.stop() == 0);
    }
}

TEST_CASE("a run longer than timeout is stopped, counted as a crash and restarted") {
    TempDir dir;
    dir.service("svc", "command = [\"sleep\", \"10\"]\ntimeout = \"300ms\"\n" +
                           restart_table("on_crash", "100ms", 1.0, 1));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();

    json s = wait_status(client, "svc", state_is("failed"), 10s,
                         "two timed-out runs exhaust max_restarts = 1");
    CHECK(s["stopped"] == "restarts_exhausted");
    CHECK(s["run"] == 2);
    CHECK(s["restarts"] == 1);
    json exit = last_exit(s);
    CHECK(exit["timed_out"] == true);
    CHECK(exit["killed_by"] == "timeout");
    CHECK(exit["signal"] == "SIGTERM");
    CHECK(exit["duration"].get<double>() >= 0.25);
    CHECK(exit["duration"].get<double>() < 2.0);
    CHECK(pkitd.stop() == 0);
}
