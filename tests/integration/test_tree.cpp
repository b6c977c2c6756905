// Group strategies for real (SPEC §6), seen through the PIDs in `status`: one_for_one
// restarts only the crashed member, one_for_all all of them, rest_for_one the crashed
// member and those after it; siblings stop in reverse start order and start again in
// start order.

#include <map>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

const std::vector<std::string> k_members{"a", "b", "c"};

// A long-running member: quick restarts, short stop timeout.
std::string member_toml() {
    return sh_command("exec sleep 1000") +
           "[restart]\njitter = false\nbackoff_initial = \"50ms\"\n[stop]\ntimeout = \"1s\"\n";
}

// Group g of a, b, c (in that member order) with `strategy`.
void write_group(const TempDir& dir, const std::string& strategy) {
    dir.daemon_config("[groups.g]\nstrategy = \"" + strategy +
                      "\"\nmembers = [\"a\", \"b\", \"c\"]\n");
    for (const auto& name : k_members) {
        dir.service(name, member_toml());
    }
}

// Waits until every member runs; their PIDs by name.
std::map<std::string, int> running_pids(Client& client) {
    std::map<std::string, int> pids;
    for (const auto& name : k_members) {
        pids[name] = wait_status(client, name, state_is("running"), 10s, name + " runs")["pid"];
    }
    return pids;
}

// SIGKILL to the member's main process: a crash.
void kill_member(Client& client, const std::string& name) {
    json reply = client.request({{"cmd", "signal"}, {"services", {name}}, {"signal", "KILL"}});
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
}

// Waits until `name` runs its run `run`, and returns its status.
json wait_run(Client& client, const std::string& name, int run) {
    return wait_status(
        client, name,
        [run](const json& s) { return s["state"] == "running" && s.value("run", 0) == run; }, 10s,
        name + " running its run " + std::to_string(run));
}

// "TYPE SERVICE" for the started/exited events seen.
std::vector<std::string> lifecycle(const EventStream& events) {
    std::vector<std::string> out;
    for (const auto& e : events.seen()) {
        const std::string type = e.value("type", "");
        if ((type == "started" || type == "exited") && e["service"].is_string()) {
            out.push_back(type + " " + e["service"].get<std::string>());
        }
    }
    return out;
}

}  // namespace

TEST_CASE("group one_for_one strategy restarts only the crashed member") {
    TempDir dir;
    write_group(dir, "one_for_one");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    auto pids = running_pids(client);

    kill_member(client, "b");
    json b = wait_run(client, "b", 2);
    CHECK(b["pid"] != pids["b"]);
    CHECK(b["restarts"] == 1);
    CHECK(b["group"] == "g");
    for (const std::string name : {"a", "c"}) {
        json s = status(client, name);
        CHECK(s["pid"] == pids[name]);
        CHECK(s["run"] == 1);
        CHECK(s["restarts"] == 0);
    }
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("group one_for_all strategy restarts every member in start order") {
    TempDir dir;
    write_group(dir, "one_for_all");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    auto pids = running_pids(client);
    EventStream events(pkitd.socket());

    kill_member(client, "b");
    for (const auto& name : k_members) {
        json s = wait_run(client, name, 2);
        CHECK_MESSAGE(s["pid"] != pids[name], name);
        CHECK_MESSAGE(s["restarts"] == 1, name);
        CHECK_MESSAGE(!pid_alive(pids[name]), name);
    }
    events.until([](const json& e) { return e["type"] == "started" && e["service"] == "c"; }, 5s,
                 "c started again");
    // b died first; c and a were stopped in reverse start order; a, b, c started again.
    const std::vector<std::string> expected{"exited b",  "exited c",  "exited a",
                                            "started a", "started b", "started c"};
    CHECK(lifecycle(events) == expected);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("group rest_for_one strategy restarts the crashed member and those after it") {
    TempDir dir;
    write_group(dir, "rest_for_one");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    auto pids = running_pids(client);
    EventStream events(pkitd.socket());

    kill_member(client, "b");
    json b = wait_run(client, "b", 2);
    json c = wait_run(client, "c", 2);
    CHECK(b["pid"] != pids["b"]);
    CHECK(c["pid"] != pids["c"]);
    CHECK(c["restarts"] == 1);
    json a = status(client, "a");
    CHECK(a["pid"] == pids["a"]);
    CHECK(a["run"] == 1);
    CHECK(a["restarts"] == 0);
    events.until([](const json& e) { return e["type"] == "started" && e["service"] == "c"; }, 5s,
                 "c started again");
    const std::vector<std::string> expected{"exited b", "exited c", "started b", "started c"};
    CHECK(lifecycle(events) == expected);

    // The last member crashing restarts only itself.
    kill_member(client, "c");
    json c3 = wait_run(client, "c", 3);
    CHECK(c3["restarts"] == 2);
    CHECK(status(client, "a")["pid"] == pids["a"]);
    CHECK(status(client, "b")["pid"] == b["pid"]);
    CHECK(pkitd.stop() == 0);
}
