// An upgrade in place (SPEC §16) with a count `pkitctl scale` set (SPEC §13): the state
// carries it, so the new pkitd keeps every instance's process and the count holds on.

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

std::string worker_toml(int instances) {
    return "command = [\"/bin/sleep\", \"1000\"]\ninstances = " + std::to_string(instances) +
           "\n[stop]\ntimeout = \"2s\"\n" + restart_table("always", "3s");
}

std::vector<int> instance_pids(Client& client, const std::string& file) {
    json reply = client.request({{"cmd", "status"}, {"services", {file}}});
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    std::vector<int> pids;
    for (const json& s : reply["result"]["services"]) {
        pids.push_back(s["pid"].is_number() ? s["pid"].get<int>() : 0);
    }
    return pids;
}

}  // namespace

TEST_CASE("an upgrade keeps the instances scale added, their pids and the scaled count") {
    TempDir dir;
    dir.service("worker", worker_toml(2));
    dir.service("api", "command = [\"/bin/sleep\", \"1000\"]\nafter = [\"worker\"]\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_running(client, "api");
    json up = client.request({{"cmd", "scale"}, {"service", "worker"}, {"instances", 4}});
    REQUIRE_MESSAGE(up["ok"] == true, up.dump());
    wait_running(client, "worker@4");
    wait_running(client, "worker@3");
    const std::vector<int> before = instance_pids(client, "worker");
    REQUIRE(before.size() == 4);
    const int api = status(client, "api")["pid"].get<int>();
    const json pkitd_pid = client.command("ping")["result"]["pid"];

    CommandResult done = ctl(pkitd, {"upgrade"}, 40s);
    REQUIRE_MESSAGE(done.exit_code == 0, done.all() << pkitd.log());

    Client after = pkitd.client();
    CHECK(after.command("ping")["result"]["pid"] == pkitd_pid);
    CHECK(instance_pids(after, "worker") == before);
    CHECK(status(after, "api")["pid"] == api);
    for (const char* name : {"worker@1", "worker@2", "worker@3", "worker@4", "api"}) {
        CHECK(status(after, name)["run"] == 1);
    }
    // The count holds in the new pkitd: a reload with the file's count unchanged keeps it.
    json same = reload(after);
    CHECK(same["added"].empty());
    CHECK(same["removed"].empty());
    CHECK(instance_pids(after, "worker") == before);
    // And `after` covers the carried instances: api's restart waits for worker@4 while
    // it backs off (3 s) after a crash.
    kill_service(after, "worker@4");
    wait_status(after, "worker@4", state_is("backoff"), 10s, "worker@4 backs off");
    json restart = after.request({{"cmd", "restart"}, {"services", {"api"}}});
    REQUIRE_MESSAGE(restart["ok"] == true, restart.dump());
    CHECK(status(after, "api")["state"] == "waiting");
    const int four = wait_running(after, "worker@4", 2)["pid"].get<int>();
    wait_running(after, "api", 2);

    // Scaling back to the file's count ends the scaled count: nothing is carried then.
    json back = after.request({{"cmd", "scale"}, {"service", "worker"}, {"instances", 2}});
    REQUIRE_MESSAGE(back["ok"] == true, back.dump());
    wait_for([&] { return !proc_info(before[2]) && !proc_info(four); }, 10s,
             "worker@3 and worker@4 stopped and reaped");
    CHECK(instance_pids(after, "worker").size() == 2);
    done = ctl(pkitd, {"upgrade"}, 40s);
    REQUIRE_MESSAGE(done.exit_code == 0, done.all() << pkitd.log());
    Client last = pkitd.client();
    CHECK(instance_pids(last, "worker") == std::vector<int>(before.begin(), before.begin() + 2));
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("an upgrade is refused while a scaled file's own count changed on disk") {
    TempDir dir;
    dir.service("worker", worker_toml(2));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json up = client.request({{"cmd", "scale"}, {"service", "worker"}, {"instances", 3}});
    REQUIRE_MESSAGE(up["ok"] == true, up.dump());
    wait_running(client, "worker@3");
    // The file now says 3 too, not reloaded: the count scale set was made against 2.
    dir.service("worker", worker_toml(3));
    CommandResult refused = ctl(pkitd, {"upgrade"}, 40s);
    CHECK(refused.exit_code == 1);
    CHECK_MESSAGE(refused.err.find("reload first, then upgrade") != std::string::npos,
                  refused.all());
    // Reloaded, the file's count decides (3, as running) and the upgrade goes ahead.
    json reloaded = reload(client);
    CHECK(reloaded["added"].empty());
    CHECK(reloaded["removed"].empty());
    const std::vector<int> before = instance_pids(client, "worker");
    CommandResult done = ctl(pkitd, {"upgrade"}, 40s);
    REQUIRE_MESSAGE(done.exit_code == 0, done.all() << pkitd.log());
    Client after = pkitd.client();
    CHECK(instance_pids(after, "worker") == before);
    CHECK(pkitd.stop() == 0);
}
