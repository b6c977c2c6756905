// Group failure and escalation for real (SPEC §1 exit statuses, §6): a group past its
// intensity emits group_failed and stops its members; the root restarts it whole up to
// [root] max_restarts, then pkitd emits escalated, stops everything and exits 1.

#include <signal.h>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// Group g of a and b (one_for_one, `max_restarts` restart events in 30 s), the
// bystander `solo` in no group, and [root] max_restarts `root_max`.
void write_failure_tree(const TempDir& dir, int max_restarts, int root_max) {
    dir.daemon_config("[root]\nmax_restarts = " + std::to_string(root_max) +
                      "\nwithin = \"60s\"\n[groups.g]\nmembers = [\"a\", \"b\"]\nmax_restarts = " +
                      std::to_string(max_restarts) + "\nwithin = \"30s\"\n");
    for (const std::string name : {"a", "b", "solo"}) {
        dir.service(name, quick_restart_runner_toml());
    }
}

bool is_type(const json& e, const std::string& type) {
    return e.value("type", "") == type;
}

// pkitd exits 1 within the stop timeouts and leaves no process of the case behind.
void expect_escalated_exit(Daemon& pkitd) {
    CHECK(pkitd.wait_exit(8s) == 1);
    const auto left = marker_processes(pkitd.marker());
    CHECK_MESSAGE(left.empty(), "left behind:" << describe(left));
}

}  // namespace

TEST_CASE("group intensity exceeded emits group_failed and escalates to exit status 1") {
    TempDir dir;
    write_failure_tree(dir, 1, 0);
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json a = wait_running(client, "a");
    wait_running(client, "b");
    wait_running(client, "solo");
    EventStream events(pkitd.socket());

    kill_service(client, "b");  // one restart event: within max_restarts 1
    wait_running(client, "b", 2);
    CHECK(status(client, "a")["pid"] == a["pid"]);
    CHECK(events.of_type("group_failed").empty());

    kill_service(client, "a");  // the second exceeds it
    json failed =
        events.until([](const json& e) { return is_type(e, "group_failed"); }, 5s, "group_failed");
    CHECK(failed["group"] == "g");
    CHECK(failed["service"].is_null());
    events.until([](const json& e) { return is_type(e, "escalated"); }, 5s, "escalated");
    expect_escalated_exit(pkitd);
}

TEST_CASE("group failure is restarted whole by the root, then escalated once exhausted") {
    TempDir dir;
    write_failure_tree(dir, 0, 1);
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json a = wait_running(client, "a");
    json b = wait_running(client, "b");
    json solo = wait_running(client, "solo");
    EventStream events(pkitd.socket());

    kill_service(client, "b");  // max_restarts 0: the group fails at once
    events.until([](const json& e) { return is_type(e, "group_failed"); }, 5s, "group_failed");
    // Both members come back with fresh runs, the root restart counted in restarts.
    json a2 = wait_running(client, "a", 2);
    json b2 = wait_running(client, "b", 2);
    CHECK(a2["pid"] != a["pid"]);
    CHECK(a2["restarts"] == 1);
    CHECK(b2["restarts"] == 2);
    CHECK_FALSE(pid_alive(a["pid"].get<pid_t>()));
    CHECK(status(client, "solo")["pid"] == solo["pid"]);
    CHECK(events.of_type("escalated").empty());

    kill_service(client, "a");  // the one root restart is used up
    events.until([](const json& e) { return is_type(e, "escalated"); }, 5s, "escalated");
    expect_escalated_exit(pkitd);
}

TEST_CASE("an escalate member that fails fails its group and escalates") {
    TempDir dir;
    write_failure_tree(dir, -1, 0);
    // A top-level key after a table belongs to that table: escalate comes first.
    dir.service("b", "escalate = true\n" + sh_command("exec sleep 1000") +
                         "[restart]\npolicy = \"never\"\n[stop]\ntimeout = \"1s\"\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_running(client, "a");
    wait_running(client, "b");
    wait_running(client, "solo");
    EventStream events(pkitd.socket());

    kill_service(client, "b");
    json failed =
        events.until([](const json& e) { return is_type(e, "group_failed"); }, 5s, "group_failed");
    CHECK(failed["group"] == "g");
    events.until([](const json& e) { return is_type(e, "escalated"); }, 5s, "escalated");
    expect_escalated_exit(pkitd);
}
