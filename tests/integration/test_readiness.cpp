// pkitd's own readiness (SPEC §11) through the protocol and pkitctl: `health` lists
// what keeps pkitd from being ready with a reason, `pkitctl health` exits 0 or 3,
// `affects_readiness = false` leaves a helper out, and a shutdown is never ready.

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

json health(Client& client) {
    json reply = client.command("health");
    REQUIRE_MESSAGE(reply.value("ok", false), reply.dump());
    return reply["result"];
}

}  // namespace

TEST_CASE("readiness: pkitctl health exits 0 when ready and 3 with the failed service's reason") {
    TempDir dir;
    dir.service("web", sh_command("exec sleep 1000"));
    dir.service("bad", sh_command("exit 1") + restart_table("on_crash", "50ms", 2.0, 0));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "bad", state_is("failed"), 10s, "bad ends failed");
    wait_status(client, "web", state_is("running"), 10s, "web runs");

    json h = health(client);
    CHECK(h["live"] == true);
    CHECK(h["ready"] == false);
    REQUIRE(h["not_ready"].size() == 1);
    CHECK(h["not_ready"][0] ==
          json{{"name", "bad"}, {"state", "failed"}, {"reason", "failed: restarts_exhausted"}});

    CommandResult ctl = run_ctl({"--socket", pkitd.socket(), "health"});
    CHECK(ctl.exit_code == 3);
    CHECK(ctl.out == "bad: failed: restarts_exhausted\n");
    CommandResult as_json = run_ctl({"--socket", pkitd.socket(), "--json", "health"});
    CHECK(as_json.exit_code == 3);
    CHECK(json::parse(as_json.out)["ready"] == false);

    // The helper stops counting: pkitd is ready although it failed again.
    dir.service("bad", "affects_readiness = false\n" + sh_command("exit 1") +
                           restart_table("on_crash", "50ms", 2.0, 0));
    CHECK(client.command("reload")["ok"] == true);
    wait_for(
        [&] {
            return run_ctl({"--socket", pkitd.socket(), "health"}).exit_code == 0;
        },
        10s, "pkitd ready once bad no longer affects readiness");
    CommandResult ready = run_ctl({"--socket", pkitd.socket(), "health"});
    CHECK(ready.out == "ready\n");
    // Ready whatever bad's state: it runs again with its new definition, then fails.
    wait_status(client, "bad", state_is("failed"), 10s, "bad fails again");
    CHECK(run_ctl({"--socket", pkitd.socket(), "health"}).exit_code == 0);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("readiness: a service in backoff and one waiting for it are named with their reasons") {
    TempDir dir;
    // Never ready: app waits for it, and its runs crash before a probe could pass.
    dir.service("db", sh_command("sleep 0.2; exit 1") + restart_table("on_crash", "30s") +
                          "[ready]\nexec = [\"false\"]\ninterval = \"50ms\"\n");
    dir.service("app", "after = [\"db\"]\n" + sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "db", state_is("backoff"), 10s, "db in backoff");
    json h = health(client);
    CHECK(h["ready"] == false);
    REQUIRE(h["not_ready"].size() == 2);
    CHECK(h["not_ready"][0]["name"] == "db");
    CHECK(h["not_ready"][0]["state"] == "backoff");
    CHECK(h["not_ready"][0]["reason"].get<std::string>().starts_with("backoff: restart 1 in "));
    CHECK(h["not_ready"][1] ==
          json{{"name", "app"}, {"state", "waiting"}, {"reason", "waiting: for db"}});
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("readiness: while pkitd shuts down it is never ready") {
    TempDir dir;
    // Ignores SIGTERM, so the shutdown lasts until its stop timeout.
    dir.service("slow", sh_command("trap '' TERM; while :; do sleep 0.05; done") +
                            "[stop]\ntimeout = \"3s\"\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "slow", state_is("running"), 10s, "slow runs");
    CHECK(health(client)["ready"] == true);
    Client watcher = pkitd.client();
    CHECK(client.command("shutdown")["ok"] == true);
    json h = health(watcher);
    CHECK(h["ready"] == false);
    CHECK(h["live"] == true);
    auto exit = pkitd.wait_exit(15s);
    CHECK(exit == 0);
}
