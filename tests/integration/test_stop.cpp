// Stopping a run (SPEC §7): the stop signal goes to the run's whole process group, then
// SIGKILL after stop.timeout for whatever ignores it.

#include <signal.h>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// A service that ignores SIGTERM (so does its sleep, which inherits the disposition)
// and touches DIR/armed once the trap is set.
void stubborn_service(const TempDir& dir) {
    dir.service("svc", sh_command("trap '' TERM; touch " + dir.file("armed") + "; sleep 30") +
                           "[stop]\ntimeout = \"300ms\"\n");
}

}  // namespace

TEST_CASE("a run that ignores SIGTERM is killed with SIGKILL after stop.timeout") {
    TempDir dir;
    stubborn_service(dir);
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "svc", state_is("running"), 5s, "running");
    wait_file(dir.file("armed"));

    SUBCASE("pkitctl stop") {
        const auto start = Clock::now();
        const auto result = run_ctl({"--socket", pkitd.socket(), "stop", "svc"});
        const double took = seconds_since(start);
        CHECK_MESSAGE(result.exit_code == 0, result.all());
        CHECK(took >= 0.25);
        CHECK(took < 3.0);
        json s = wait_status(client, "svc", state_is("stopped"), 5s, "stopped");
        CHECK(s["stopped"] == "operator");
        CHECK(last_exit(s)["signal"] == "SIGKILL");
        CHECK(last_exit(s)["killed_by"] == "operator");
        // SIGKILLed members of the group may take a moment to be gone.
        wait_for([&] { return marker_processes(pkitd.marker(), {pkitd.pid()}).empty(); }, 2s,
                 "no process of the service left",
                 [&] { return describe(marker_processes(pkitd.marker(), {pkitd.pid()})); });
        CHECK(pkitd.stop() == 0);
    }
    SUBCASE("shutdown") {
        const auto start = Clock::now();
        CHECK(pkitd.stop() == 0);
        const double took = seconds_since(start);
        CHECK(took >= 0.25);
        CHECK(took < 3.0);
        const auto left = marker_processes(pkitd.marker());
        CHECK_MESSAGE(left.empty(), "left behind:" << describe(left));
    }
}

TEST_CASE("stopping a service reaches the grandchildren in its process group") {
    TempDir dir;
    dir.service("svc", sh_command("sleep 1000 & touch " + dir.file("armed") + "; wait"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json s = wait_status(client, "svc", state_is("running"), 5s, "running");
    wait_file(dir.file("armed"));
    // The shell and its background sleep share the run's process group.
    const pid_t pid = s["pid"].get<pid_t>();
    wait_for([&] { return group_members(pid).size() >= 2; }, 5s, "the background sleep",
             [&] { return describe(group_members(pid)); });

    SUBCASE("by the operator") {
        json reply = client.request({{"cmd", "stop"}, {"services", {"svc"}}});
        REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
        wait_for([&] { return marker_processes(pkitd.marker(), {pkitd.pid()}).empty(); }, 5s,
                 "no process of the service left",
                 [&] { return describe(marker_processes(pkitd.marker(), {pkitd.pid()})); });
        CHECK(status(client, "svc")["state"] == "stopped");
        CHECK(pkitd.stop() == 0);
    }
    SUBCASE("by shutdown") {
        CHECK(pkitd.stop() == 0);
        const auto left = marker_processes(pkitd.marker());
        CHECK_MESSAGE(left.empty(), "left behind:" << describe(left));
    }
}

TEST_CASE("a stopped service starts again with a fresh run on start") {
    TempDir dir;
    dir.service("svc", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json first = wait_status(client, "svc", state_is("running"), 5s, "running");

    json reply = client.request({{"cmd", "stop"}, {"services", {"svc"}}});
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    // `stop` replies once the run has ended.
    CHECK_FALSE(pid_alive(first["pid"].get<pid_t>()));
    json stopped = status(client, "svc");
    CHECK(stopped["state"] == "stopped");
    CHECK(stopped["stopped"] == "operator");
    CHECK(stopped["restarts"] == 0);

    reply = client.request({{"cmd", "start"}, {"services", {"svc"}}});
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    json again = wait_status(client, "svc", state_is("running"), 5s, "running again");
    CHECK(again["run"] == 2);
    CHECK(again["restarts"] == 0);
    CHECK(again["stopped"].is_null());
    CHECK(pkitd.stop() == 0);
}
