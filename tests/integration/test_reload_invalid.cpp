// Reload of an invalid tree (SPEC §1, §8, §9): nothing changes, every service keeps
// running with the same PID, and every problem comes back as a FILE:LINE:COLUMN error
// line, through the raw socket (invalid_config), `pkitctl reload` (exit 1) and the log
// for SIGHUP.

#include <signal.h>

#include <algorithm>
#include <regex>
#include <sstream>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// a, b and group g of both, running; then a tree with three problems in two files:
// an unknown key, a bad value and a group member that is not defined.
struct Broken {
    TempDir dir;
    Daemon pkitd{dir_with_services(dir)};
    std::string a_file = dir.str() + "/services/a.toml";
    std::string b_file = dir.str() + "/services/b.toml";

    static const TempDir& dir_with_services(const TempDir& dir) {
        dir.daemon_config("[groups.g]\nmembers = [\"a\", \"b\"]\n");
        dir.service("a", runner_toml());
        dir.service("b", runner_toml());
        return dir;
    }
    void break_it() const {
        dir.service("a", runner_toml("1001") + "bogus_key = 1\n");
        dir.service("b", runner_toml("1001") + "[restart]\npolicy = \"sometimes\"\n");
        dir.daemon_config("[groups.g]\nmembers = [\"a\", \"b\", \"ghost\"]\n");
    }
    // The error lines in `text` (pkitd's own "pkitd: error: reload: ..." log line
    // aside): all three are there, each with FILE:LINE:COLUMN.
    void check_errors(const std::string& text) const {
        const std::regex positioned(R"(^(.+):(\d+):(\d+): error: .+$)");
        std::vector<std::string> errors;
        for (const auto& line : nonempty_lines(text)) {
            if (line.find(": error: ") != std::string::npos && !line.starts_with("pkitd: ")) {
                CHECK_MESSAGE(std::regex_match(line, positioned), line);
                errors.push_back(line);
            }
        }
        CHECK_MESSAGE(errors.size() == 3, text);
        auto has = [&](const std::string& prefix) {
            return std::any_of(errors.begin(), errors.end(),
                               [&](const std::string& l) { return l.starts_with(prefix); });
        };
        CHECK_MESSAGE(has(a_file + ":4:1: error: "), text);                 // the bogus key
        CHECK_MESSAGE(has(b_file + ":5:10: error: "), text);                // the bad policy value
        CHECK_MESSAGE(has(dir.str() + "/pkitd.toml:2:22: error: "), text);  // "ghost"
    }
};

}  // namespace

TEST_CASE("reload of an invalid tree keeps every service and reports every positioned error") {
    Broken t;
    t.pkitd.wait_ready();
    Client client = t.pkitd.client();
    json a = wait_status(client, "a", state_is("running"), 10s, "a runs");
    json b = wait_status(client, "b", state_is("running"), 10s, "b runs");
    t.break_it();

    SUBCASE("raw socket") {
        json reply = client.command("reload");
        CHECK(reply["ok"] == false);
        CHECK(reply["error"]["code"] == "invalid_config");
        t.check_errors(reply["error"]["message"].get<std::string>());
    }
    SUBCASE("pkitctl reload") {
        CommandResult r = run_ctl({"--socket", t.pkitd.socket(), "reload"});
        CHECK(r.exit_code == 1);
        // pkitctl says what happened on a line of its own, then every error line.
        const std::string prefix =
            "pkitctl: invalid_config: the configuration is invalid; nothing changed\n";
        REQUIRE_MESSAGE(r.err.starts_with(prefix), r.all());
        t.check_errors(r.err.substr(prefix.size()));
    }
    SUBCASE("SIGHUP") {
        t.pkitd.signal(SIGHUP);
        wait_for([&] { return t.pkitd.log().find("invalid configuration") != std::string::npos; },
                 5s, "the reload error in the log", [&] { return t.pkitd.log(); });
        t.check_errors(t.pkitd.log());
    }
    for (const auto& [name, before] : {std::pair{"a", a}, std::pair{"b", b}}) {
        json now = status(client, name);
        CHECK(now["pid"] == before["pid"]);
        CHECK(now["run"] == 1);
        CHECK(now["state"] == "running");
        CHECK(now["group"] == "g");
    }
    // Still pkitd as it was: a valid tree reloads again.
    t.dir.daemon_config("[groups.g]\nmembers = [\"a\", \"b\"]\n");
    t.dir.service("a", runner_toml());
    t.dir.service("b", runner_toml());
    json reply = client.command("reload");
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    CHECK(reply["result"]["unchanged"] == 2);
    CHECK(t.pkitd.stop() == 0);
}

TEST_CASE("reload with the services directory gone, or a link to nothing, is refused") {
    TempDir dir;
    dir.service("a", runner_toml());
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json a = wait_status(client, "a", state_is("running"), 10s, "a runs");
    const fs::path services = dir.path() / "services";
    const fs::path moved = dir.path() / "services.moved";
    fs::rename(services, moved);
    SUBCASE("missing") {}
    SUBCASE("a dangling symbolic link") {
        fs::create_directory_symlink("nowhere", services);
    }
    json reply = client.command("reload");
    CHECK(reply["ok"] == false);
    CHECK(reply["error"]["code"] == "invalid_config");
    const std::string message = reply["error"]["message"].get<std::string>();
    CHECK_MESSAGE(
        message.find(services.string() + ":1:1: error: cannot read the services directory: ") !=
            std::string::npos,
        message);
    json now = status(client, "a");
    CHECK(now["pid"] == a["pid"]);
    CHECK(now["state"] == "running");
    // Back in place, the same tree reloads with nothing changed.
    fs::remove(services);
    fs::rename(moved, services);
    CHECK(reload(client)["unchanged"] == 1);
    CHECK(pkitd.stop() == 0);
}
