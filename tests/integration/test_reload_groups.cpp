// Reload while the tree is at work (SPEC §6, §8): a reload that leaves a group's
// definition alone does not interrupt its root restart or its strategy's restarts.

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// A member that, on SIGTERM, lingers in `stopping` until DIR/release exists (then at
// once); DIR/NAME.armed once its trap is set. The case reloads while a member is held
// there, whatever the machine's load, then releases it.
std::string lingering_toml(const TempDir& dir, const std::string& name) {
    return sh_command("trap 'while [ ! -e " + dir.file("release") +
                      " ]; do sleep 0.01; done; exit 0' TERM; touch " + dir.file(name + ".armed") +
                      "; while :; do sleep 0.05; done") +
           "[restart]\njitter = false\nbackoff_initial = \"50ms\"\n[stop]\ntimeout = \"30s\"\n";
}

void release(const TempDir& dir) {
    write_file(dir.path() / "release", "");
}

}  // namespace

TEST_CASE("reload during a group's root restart lets the restart finish") {
    TempDir dir;
    const std::string pkitd_toml =
        "[root]\nmax_restarts = 1\n[groups.g]\nmembers = [\"a\", \"b\"]\nmax_restarts = 0\n";
    dir.daemon_config(pkitd_toml);
    dir.service("a", lingering_toml(dir, "a"));
    dir.service("b", lingering_toml(dir, "b"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_running(client, "a", 1);
    json b = wait_running(client, "b", 1);
    wait_file(dir.file("b.armed"));
    EventStream events(pkitd.socket());

    kill_service(client, "a");  // g fails; b (the last member) lingers until released
    events.until([](const json& e) { return e["type"] == "group_failed"; }, 5s, "group_failed");
    wait_status(client, "b", state_is("stopping"), 5s, "b stopping");
    dir.daemon_config("# the same tree, reformatted\n" + pkitd_toml);
    json reply = client.command("reload");
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    CHECK(reply["result"]["unchanged"] == 2);
    // The reload came while the root restart was under way.
    CHECK(status(client, "b")["state"] == "stopping");
    release(dir);

    json a2 = wait_running(client, "a", 2);
    json b2 = wait_running(client, "b", 2);
    CHECK(a2["restarts"] == 2);  // its own crash and the root restart
    CHECK(b2["restarts"] == 1);
    CHECK(b2["pid"] != b["pid"]);
    CHECK(events.of_type("escalated").empty());
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("reload during a one_for_all restart lets the strategy restart every member") {
    TempDir dir;
    const std::string pkitd_toml =
        "[groups.g]\nstrategy = \"one_for_all\"\nmembers = [\"a\", \"b\", \"c\"]\n";
    dir.daemon_config(pkitd_toml);
    for (const std::string name : {"a", "b", "c"}) {
        dir.service(name, lingering_toml(dir, name));
    }
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json a = wait_running(client, "a", 1);
    wait_running(client, "b", 1);
    wait_running(client, "c", 1);
    wait_file(dir.file("b.armed"));

    kill_service(client, "c");  // b is stopped first (held until released), then a
    wait_status(client, "b", state_is("stopping"), 5s, "b stopping");
    json reply = client.command("reload");
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    // The reload came while the strategy's restart was under way.
    CHECK(status(client, "b")["state"] == "stopping");
    release(dir);

    for (const std::string name : {"a", "b", "c"}) {
        json s = wait_running(client, name, 2);
        CHECK_MESSAGE(s["restarts"] == 1, name);
    }
    CHECK_FALSE(pid_alive(a["pid"].get<pid_t>()));
    CHECK(pkitd.stop() == 0);
}
