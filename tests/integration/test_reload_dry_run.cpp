// pkitctl reload --dry-run (SPEC §21): what a reload would add, remove and change, each
// changed service with the keys that differ and whether its run would be restarted;
// the errors of a tree a reload would refuse (exit 2); and nothing changed in pkitd,
// not even what the next reload reuses.

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

TEST_CASE("reload --dry-run shows what a reload would do and changes nothing") {
    TempDir dir;
    dir.service("keep", sh_command("exec sleep 1000"));
    dir.service("change", sh_command("exec sleep 1000"));
    dir.service("remove", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json change = wait_status(client, "change", state_is("running"), 5s, "running");
    wait_status(client, "remove", state_is("running"), 5s, "running");

    const auto same = ctl(pkitd, {"reload", "--dry-run"});
    CHECK_MESSAGE(same.exit_code == 0, same.all());
    CHECK(same.out == "no change: 3 unchanged\n");

    dir.service("change", sh_command("exec sleep 1001") + "[stop]\ntimeout = \"7s\"\n");
    fs::remove(dir.path() / "services" / "remove.toml");
    dir.service("add", sh_command("exec sleep 1000"));

    const auto text = ctl(pkitd, {"reload", "--dry-run"});
    CHECK_MESSAGE(text.exit_code == 0, text.all());
    CHECK(text.out ==
          "add: would be added\n"
          "remove: would be removed\n"
          "change: changed, its run would be restarted\n"
          "  command       [\"/bin/sh\", \"-c\", \"exec sleep 1000\"] -> "
          "[\"/bin/sh\", \"-c\", \"exec sleep 1001\"]\n"
          "  stop.timeout  \"5s\" -> \"7s\"\n"
          "dry run, nothing changed; 1 unchanged\n");

    const auto as_json = ctl(pkitd, {"--json", "reload", "--dry-run"});
    REQUIRE(as_json.exit_code == 0);
    json preview = json::parse(as_json.out);
    CHECK(preview["dry_run"] == true);
    CHECK(preview["added"] == json{"add"});
    CHECK(preview["removed"] == json{"remove"});
    CHECK(preview["unchanged"] == 1);
    REQUIRE(preview["changed"].size() == 1);
    CHECK(preview["changed"][0]["service"] == "change");
    CHECK(preview["changed"][0]["effect"] == "restart");
    CHECK(preview["changed"][0]["restart"] == true);
    CHECK(preview["changed"][0]["keys"][1] ==
          json{{"key", "stop.timeout"}, {"old", "\"5s\""}, {"new", "\"7s\""}});

    // Nothing changed: no service added, removed or restarted.
    CHECK(client.request({{"cmd", "status"}, {"services", {"add"}}})["ok"] == false);
    CHECK(status(client, "remove")["state"] == "running");
    CHECK(status(client, "change")["pid"] == change["pid"]);
    CHECK(status(client, "change")["stop_timeout"] == 5.0);

    // The reload after it does what the preview said.
    json reloaded = reload(client);
    CHECK(reloaded["added"] == json{"add"});
    CHECK(reloaded["removed"] == json{"remove"});
    CHECK(reloaded["changed"] == json{"change"});
    CHECK(ctl(pkitd, {"reload", "--dry-run"}).out == "no change: 3 unchanged\n");
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("reload --dry-run of a tree a reload would refuse: its errors, exit 2") {
    TempDir dir;
    dir.service("web", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json before = wait_status(client, "web", state_is("running"), 5s, "running");
    dir.service("web", sh_command("exec sleep 1000") + "[restart]\npolicy = \"sometimes\"\n");
    const auto result = ctl(pkitd, {"reload", "--dry-run"});
    CHECK(result.exit_code == 2);
    CHECK(result.out.empty());
    const std::string at = dir.file("services/web.toml") + ":3:10: error: restart.policy: ";
    CHECK_MESSAGE(result.err.starts_with(at), result.err);
    CHECK(result.err.find("pkitctl: a reload would refuse this configuration; nothing changed") !=
          std::string::npos);
    CHECK(status(client, "web")["pid"] == before["pid"]);
    CHECK(pkitd.log().find("invalid configuration") == std::string::npos);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("reload --dry-run tells a start_first replacement, a re-armed job and a group's change") {
    TempDir dir;
    const int port = unused_port();
    const std::string web = sh_command("exec sleep 1000") +
                            "[[listen]]\ntcp = \"127.0.0.1:" + std::to_string(port) +
                            "\"\n[restart]\norder = \"start_first\"\n";
    dir.service("web", web);
    dir.service("job", sh_command("exit 0") + "type = \"oneshot\"\nschedule = \"0 3 * * *\"\n");
    dir.service("api", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "web", state_is("running"), 5s, "running");
    wait_status(client, "api", state_is("running"), 5s, "running");

    dir.service("web", web + "[ready]\ntcp = \"127.0.0.1:" + std::to_string(port) + "\"\n");
    dir.service("job", sh_command("exit 0") + "type = \"oneshot\"\nschedule = \"15 3 * * *\"\n");
    dir.daemon_config("[groups.backend]\nmembers = [\"api\"]\n");
    const auto result = ctl(pkitd, {"reload", "--dry-run"});
    CHECK_MESSAGE(result.exit_code == 0, result.all());
    CHECK(result.out.find("web: changed, its run would be restarted, the new run first "
                          "(start_first)\n  ready.tcp  (unset) -> \"127.0.0.1:" +
                          std::to_string(port) + "\"\n") != std::string::npos);
    CHECK(result.out.find("job: changed, no restart: the job would be re-armed\n"
                          "  schedule  \"0 3 * * *\" -> \"15 3 * * *\"\n") != std::string::npos);
    CHECK(result.out.find("api: changed, its run would be restarted\n"
                          "  group  (unset) -> \"backend\"\n") != std::string::npos);
    // The warning a reload would log comes with the preview too.
    CHECK_MESSAGE(result.err.find(":7:1: warning: ready.tcp: ") != std::string::npos, result.all());
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("pkitctl reload --help names --dry-run and --no-wait") {
    const auto help = run_ctl({"reload", "--help"});
    CHECK(help.exit_code == 0);
    CHECK(help.out.find("--dry-run") != std::string::npos);
    CHECK(help.out.find("--no-wait") != std::string::npos);
}
