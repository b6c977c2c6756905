// One-shot jobs (SPEC §2 `type`, §6): a oneshot is ready only once a run ended clean
// (`done`), so its `after` dependents start after it finished; one that failed leaves
// them waiting until an operator start succeeds.

#include <algorithm>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// The first event of `type` for `service` (and run, when not 0), or fails the case.
json event_of(const std::vector<json>& events, const std::string& type, const std::string& service,
              int run = 0) {
    auto it = std::find_if(events.begin(), events.end(), [&](const json& e) {
        return e["type"] == type && e["service"] == service && (run == 0 || e["run"] == run);
    });
    REQUIRE_MESSAGE(it != events.end(), "no " << type << " event of " << service);
    return *it;
}

// The position of an event in the stream (events are published in the order pkitd
// decided them).
std::size_t index_of(const std::vector<json>& events, const json& event) {
    return static_cast<std::size_t>(std::find(events.begin(), events.end(), event) -
                                    events.begin());
}

const std::string k_web = sh_command("exec sleep 1000");

}  // namespace

TEST_CASE("a oneshot job's dependent starts only once the job is done") {
    TempDir dir;
    dir.service("migrate", "type = \"oneshot\"\n" + sh_command(gate(dir) + "sleep 2; exit 0"));
    dir.service("web", "after = [\"migrate\"]\n" + k_web);
    Daemon pkitd(dir);
    pkitd.wait_ready();
    EventStream events(pkitd.socket());
    Client client = pkitd.client();
    open_gate(dir);

    // While the job runs, it is running but not ready, and web waits for it.
    json job = wait_status(client, "migrate", state_is("running"), 5s, "the job runs");
    CHECK(job["type"] == "oneshot");
    CHECK(job["ready"] == false);
    json web = status(client, "web");
    CHECK(web["state"] == "waiting");
    CHECK(web["type"] == "service");
    json explain = client.request({{"cmd", "explain"}, {"service", "web"}});
    REQUIRE(explain["ok"] == true);
    const std::string text = explain["result"]["text"];
    CHECK_MESSAGE(text.find("waiting for migrate to finish (running for ") != std::string::npos,
                  text);

    events.until([](const json& e) { return e["type"] == "started" && e["service"] == "web"; }, 15s,
                 "web starts");
    const auto& seen = events.seen();
    json exited = event_of(seen, "exited", "migrate");
    json started = event_of(seen, "started", "web");
    CHECK(exited["code"] == 0);
    CHECK(index_of(seen, exited) < index_of(seen, started));
    CHECK(exited["at"].get<double>() <= started["at"].get<double>());
    CHECK(status(client, "migrate")["state"] == "done");
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("a oneshot that exits 1 twice then 0 releases its dependent after the third run") {
    TempDir dir;
    const std::string count = dir.file("count");
    dir.service("migrate", "type = \"oneshot\"\n" +
                               sh_command("n=$(cat " + count +
                                          " 2>/dev/null || echo 0); n=$((n+1)); "
                                          "echo $n > " +
                                          count + "; [ $n -ge 3 ]") +
                               restart_table("on_crash", "100ms"));
    dir.service("web", "after = [\"migrate\"]\n" + k_web);
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json web = wait_status(client, "web", state_is("running"), 15s, "web runs");
    json job = status(client, "migrate");
    CHECK(job["state"] == "done");
    CHECK(job["run"] == 3);
    CHECK(job["restarts"] == 2);
    // web started after the third run's clean exit, not before.
    CHECK(web["run"] == 1);
    CHECK(web["started_at"].get<double>() >= last_exit(job)["at"].get<double>());
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("a oneshot that failed leaves its dependent waiting until pkitctl start succeeds") {
    TempDir dir;
    const std::string ok = dir.file("ok");
    dir.service("migrate", "type = \"oneshot\"\n" + sh_command("[ -e " + ok + " ]") +
                               restart_table("on_crash", "50ms", 2.0, 1));
    dir.service("web", "after = [\"migrate\"]\n" + k_web);
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json job = wait_status(client, "migrate", state_is("failed"), 10s, "the job fails for good");
    CHECK(job["stopped"] == "restarts_exhausted");
    json web = status(client, "web");
    CHECK(web["state"] == "waiting");
    CHECK(web["run"] == 0);
    json explain = client.request({{"cmd", "explain"}, {"service", "web"}});
    const std::string text = explain["result"]["text"];
    CHECK_MESSAGE(text.find("migrate, which failed") != std::string::npos, text);

    write_file(ok, "");
    const auto result = run_ctl({"--socket", pkitd.socket(), "start", "migrate"});
    CHECK_MESSAGE(result.exit_code == 0, result.all());
    wait_status(client, "web", state_is("running"), 10s, "web is released");
    CHECK(status(client, "migrate")["state"] == "done");
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("[ready] or policy always with type oneshot is a positioned configuration error") {
    TempDir dir;
    dir.service("job", "command = [\"/bin/true\"]\ntype = \"oneshot\"\n\n[ready]\nnotify = true\n");
    dir.service("loop",
                "command = [\"/bin/true\"]\ntype = \"oneshot\"\n[restart]\npolicy = \"always\"\n");
    dir.service("bad", "command = [\"/bin/true\"]\ntype = \"job\"\n");
    const auto result = run_pkitd({"--check", "--config", dir.str()});
    INFO(result.all());
    CHECK(result.exit_code == 2);
    const std::string text = result.all();
    CHECK(text.find("services/job.toml:2:1: error: type: a \"oneshot\" job is ready once") !=
          std::string::npos);
    CHECK(text.find("services/loop.toml:4:10: error: restart.policy: \"always\"") !=
          std::string::npos);
    CHECK(text.find("services/bad.toml:2:8: error: type:") != std::string::npos);
}

TEST_CASE("a reload that does not change a done job does not run it again") {
    TempDir dir;
    dir.service("migrate", "type = \"oneshot\"\n" + sh_command("echo migrated"));
    dir.service("web", "after = [\"migrate\"]\n" + k_web);
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "web", state_is("running"), 10s, "web runs");
    REQUIRE(status(client, "migrate")["state"] == "done");

    // web changes, migrate does not: only web restarts, and it needs no new migration.
    dir.service("web", "after = [\"migrate\"]\n" + sh_command("exec sleep 1001"));
    json reply = client.command("reload");
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    CHECK(reply["result"]["changed"] == json::array({"web"}));
    wait_status(client, "web", run_at_least(2), 10s, "web restarted with its new definition");
    wait_status(client, "web", state_is("running"), 10s, "web runs again");
    json job = status(client, "migrate");
    CHECK(job["state"] == "done");
    CHECK(job["run"] == 1);
    CHECK(pkitd.stop() == 0);
}
