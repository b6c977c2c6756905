// Reload (SPEC §8) and what it keeps: an unchanged service keeps its PID, run and
// counters; a changed one restarts with fresh counters while `run` keeps counting; a
// change to a group's definition restarts its members and nothing else.

#include <signal.h>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

TEST_CASE("reload keeps an unchanged service's PID and counters and resets a changed one's") {
    TempDir dir;
    dir.service("keep", quick_restart_runner_toml());
    dir.service("change", quick_restart_runner_toml());
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_running(client, "keep", 1);
    wait_running(client, "change", 1);
    // One crash each: restarts 1, run 2.
    kill_service(client, "keep");
    kill_service(client, "change");
    json keep = wait_running(client, "keep", 2);
    json change = wait_running(client, "change", 2);
    REQUIRE(keep["restarts"] == 1);
    REQUIRE(change["restarts"] == 1);

    dir.service("keep", "# reformatted\n\n" + quick_restart_runner_toml());
    dir.service("change", quick_restart_runner_toml("1001"));
    json result = reload(client);
    CHECK(result["changed"] == json::array({"change"}));
    CHECK(result["unchanged"] == 1);
    CHECK(result["added"].empty());
    CHECK(result["removed"].empty());

    json changed = wait_running(client, "change", 3);
    CHECK(changed["restarts"] == 0);
    CHECK(changed["pid"] != change["pid"]);
    CHECK_FALSE(pid_alive(change["pid"].get<pid_t>()));
    json kept = status(client, "keep");
    CHECK(kept["pid"] == keep["pid"]);
    CHECK(kept["run"] == 2);
    CHECK(kept["restarts"] == 1);
    CHECK(kept["started_at"] == keep["started_at"]);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("reload of a group's changed strategy restarts its members only") {
    TempDir dir;
    dir.daemon_config("[groups.g]\nstrategy = \"one_for_one\"\nmembers = [\"a\", \"b\"]\n");
    dir.service("a", quick_restart_runner_toml());
    dir.service("b", quick_restart_runner_toml());
    dir.service("solo", quick_restart_runner_toml());
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json a = wait_running(client, "a", 1);
    json b = wait_running(client, "b", 1);
    json solo = wait_running(client, "solo", 1);

    dir.daemon_config("[groups.g]\nstrategy = \"one_for_all\"\nmembers = [\"a\", \"b\"]\n");
    json result = reload(client);
    CHECK(result["changed"] == json::array({"a", "b"}));
    CHECK(result["unchanged"] == 1);
    json a2 = wait_running(client, "a", 2);
    json b2 = wait_running(client, "b", 2);
    CHECK(a2["pid"] != a["pid"]);
    CHECK(b2["pid"] != b["pid"]);
    CHECK(a2["restarts"] == 0);
    CHECK(status(client, "solo")["pid"] == solo["pid"]);

    // The new strategy applies: a crash of b now restarts a too.
    kill_service(client, "b");
    json a3 = wait_running(client, "a", 3);
    wait_running(client, "b", 3);
    CHECK(a3["restarts"] == 1);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("SIGHUP reload emits a reload event with the counts") {
    TempDir dir;
    dir.service("keep", quick_restart_runner_toml());
    dir.service("gone", quick_restart_runner_toml());
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json keep = wait_running(client, "keep", 1);
    json gone = wait_running(client, "gone", 1);
    EventStream events(pkitd.socket());

    fs::remove(dir.path() / "services" / "gone.toml");
    dir.service("new", quick_restart_runner_toml());
    pkitd.signal(SIGHUP);
    json e =
        events.until([](const json& ev) { return ev["type"] == "reload"; }, 5s, "the reload event");
    CHECK(e["service"].is_null());
    CHECK(e["reason"] == "1 added, 1 removed, 0 changed, 1 unchanged");
    wait_running(client, "new", 1);
    wait_for([&] { return !pid_alive(gone["pid"].get<pid_t>()); }, 5s, "gone stops");
    json all = client.command("status");
    std::vector<std::string> names;
    for (const auto& s : all["result"]["services"]) {
        names.push_back(s["name"]);
    }
    CHECK(names == std::vector<std::string>{"keep", "new"});
    CHECK(status(client, "keep")["pid"] == keep["pid"]);
    CHECK(pkitd.stop() == 0);
}
