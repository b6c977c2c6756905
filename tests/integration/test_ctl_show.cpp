// pkitctl show NAME (SPEC §10): one screen about one service, checked field by field on
// a running, a backoff, a failed and a oneshot-done service; an unknown name exits 1.

#include <map>
#include <sstream>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// The "  label: value" lines of a show screen, by label; "title" holds the first line.
std::map<std::string, std::string> fields_of(const std::string& screen) {
    std::map<std::string, std::string> out;
    std::istringstream in(screen);
    std::string line;
    std::getline(in, line);
    out["title"] = line;
    while (std::getline(in, line) && !line.empty()) {
        const auto colon = line.find(':');
        if (line.starts_with("  ") && colon != std::string::npos) {
            auto value = line.substr(colon + 1);
            value.erase(0, value.find_first_not_of(' '));
            out[line.substr(2, colon - 2)] = value;
        }
    }
    return out;
}

}  // namespace

TEST_CASE("ctl show: running, backoff, failed and oneshot-done services field by field") {
    TempDir dir;
    dir.service("db", sh_command("exec sleep 1000"));
    dir.service("web", sh_command("echo hello-from-web; exec sleep 1000") +
                           "cwd = " + toml_str(dir.str()) + "\nafter = [\"db\"]\n" +
                           "[restart]\nmax_restarts = 5\nwithin = \"1m\"\n" +
                           "[health]\nexec = [\"true\"]\ninterval = \"200ms\"\nfailures = 3\n");
    dir.service("flaky", sh_command("echo flaky-out; exit 1") + restart_table("on_crash", "20s"));
    dir.service("broken", sh_command("exit 3") + restart_table("never", "1s"));
    dir.service("job", "type = \"oneshot\"\n" + sh_command("echo job-ran; exit 0"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(
        client, "web",
        [](const json& s) {
            return s["state"] == "running" && s["health"].is_object() &&
                   s["health"]["status"] == "healthy";
        },
        10s, "web running and healthy");
    wait_status(client, "flaky", state_is("backoff"), 10s, "flaky in backoff");
    wait_status(client, "broken", state_is("failed"), 10s, "broken failed");
    wait_status(client, "job", state_is("done"), 10s, "job done");
    wait_for(
        [&] {
            return !texts(client.request({{"cmd", "logs"}, {"service", "web"}})["result"]).empty();
        },
        5s, "web's line captured");

    const json web_status = status(client, "web");
    auto web = ctl(pkitd, {"show", "web"});
    INFO(web.all());
    REQUIRE(web.exit_code == 0);
    auto f = fields_of(web.out);
    CHECK(f["title"] == "web: running");
    CHECK(f["state"].starts_with("running for "));
    CHECK(f["run"].starts_with("1, pid " + std::to_string(web_status["pid"].get<int>()) +
                               ", started "));
    CHECK(f["type"] == "service");
    CHECK(f["group"] == "-");
    CHECK(f["command"] == "/bin/sh -c 'echo hello-from-web; exec sleep 1000'");
    CHECK(f["cwd"] == dir.str());
    CHECK(f["user"] == "-");
    CHECK(f["after"] == "db");
    CHECK(f["restarts"] == "0 (policy on_crash; at most 5 in a 1m window; 0 counted)");
    CHECK(f["last exit"] == "none yet");
    CHECK(f["liveness"] == "exec true every 200ms, timeout 1s, 3 failures: healthy");
    CHECK(f["readiness"] == "-");
    CHECK(f["resources"].find("process") != std::string::npos);
    CHECK(f["resources"].find("memory ") != std::string::npos);
    CHECK(f["explain"].starts_with("running: run 1"));
    CHECK(web.out.find("last line of output (run 1):\n") != std::string::npos);
    CHECK(web.out.find(" hello-from-web\n") != std::string::npos);

    auto flaky = ctl(pkitd, {"show", "flaky"});
    INFO(flaky.all());
    REQUIRE(flaky.exit_code == 0);
    f = fields_of(flaky.out);
    CHECK(f["title"] == "flaky: backoff");
    CHECK(f["state"].starts_with("backoff for "));
    CHECK(f["state"].find(", restart 1 in ") != std::string::npos);  // restarts counts it
    CHECK(f["restarts"] == "1 (policy on_crash; no limit)");
    CHECK(f["last exit"].starts_with("exited with code 1 after "));
    CHECK(f["resources"] == "-");
    CHECK(f["explain"].starts_with("restart "));
    CHECK(flaky.out.find(" flaky-out\n") != std::string::npos);

    auto broken = ctl(pkitd, {"show", "broken"});
    INFO(broken.all());
    REQUIRE(broken.exit_code == 0);
    f = fields_of(broken.out);
    CHECK(f["title"] == "broken: failed");
    CHECK(f["state"].starts_with("failed (policy_satisfied) for "));
    CHECK(f["restarts"] == "0 (policy never; no limit)");
    CHECK(f["last exit"].starts_with("exited with code 3 after "));
    CHECK(f["explain"].starts_with("failed (policy_satisfied)"));
    CHECK(broken.out.find("no output from the latest run") != std::string::npos);

    auto job = ctl(pkitd, {"show", "job"});
    INFO(job.all());
    REQUIRE(job.exit_code == 0);
    f = fields_of(job.out);
    CHECK(f["title"] == "job: done");
    CHECK(f["state"].starts_with("done (policy_satisfied) for "));
    CHECK(f["type"] == "oneshot");
    CHECK(f["last exit"].starts_with("exited with code 0 after "));
    CHECK(job.out.find(" job-ran\n") != std::string::npos);

    // --json: the three results as pkitd gave them.
    auto as_json = ctl(pkitd, {"--json", "show", "web"});
    REQUIRE(as_json.exit_code == 0);
    const json shown = json::parse(as_json.out);
    CHECK(shown["status"]["name"] == "web");
    CHECK(shown["status"].contains("resources"));
    CHECK(shown["explain"]["facts"]["cwd"] == dir.str());
    CHECK(shown["logs"]["lines"].size() == 1);

    auto unknown = ctl(pkitd, {"show", "nope"});
    CHECK_MESSAGE(unknown.exit_code == 1, unknown.all());
    CHECK(unknown.err.find("unknown_service") != std::string::npos);
    CHECK(pkitd.stop() == 0);
}
