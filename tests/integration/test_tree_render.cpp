// `pkitctl status --tree` (SPEC §10): each member's line carries its STATE word, in
// the STATE column, whatever the state: a running member, a member never started
// (`autostart = false`: `stopped`), and a root-level service that ended (`done`).

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

std::vector<std::string> words(const std::string& line) {
    std::vector<std::string> out;
    std::istringstream in(line);
    for (std::string w; in >> w;) {
        out.push_back(w);
    }
    return out;
}

// The line whose first word is `name`; fails the case when there is none.
std::string line_of(const std::vector<std::string>& lines, const std::string& name,
                    const std::string& all) {
    for (const auto& line : lines) {
        auto w = words(line);
        if (!w.empty() && w[0] == name) {
            return line;
        }
    }
    FAIL("no line for " << name << " in:\n" << all);
    return "";
}

}  // namespace

TEST_CASE("status --tree shows each member's state, a stopped member included") {
    TempDir dir;
    dir.daemon_config("[groups.g]\nmembers = [\"a\", \"b\"]\n");
    dir.service("a", runner_toml());
    dir.service("b", "autostart = false\n" + runner_toml());
    // A one-shot job at the root: exits 0, so supervision ends `done`.
    dir.service("job", sh_command("exit 0"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "a", state_is("running"), 10s, "a runs");
    wait_status(client, "job", state_is("done"), 10s, "job done");
    json b = status(client, "b");
    REQUIRE(b["state"] == "stopped");
    REQUIRE(b["group"] == "g");

    CommandResult tree = run_ctl({"--socket", pkitd.socket(), "status", "--tree"});
    REQUIRE_MESSAGE(tree.exit_code == 0, tree.all());
    INFO("tree:\n" << tree.out);
    const std::vector<std::string> lines = lines_of(tree.out);
    REQUIRE(lines.size() == 5);  // header, g/, a, b, job
    const std::string header = lines[0];
    const std::size_t state_column = header.find("STATE");
    REQUIRE(state_column != std::string::npos);
    CHECK(header.find("\033[") == std::string::npos);  // not a terminal: no colour

    // The group line, then its members indented under it, in member order.
    const auto g_line = std::find_if(lines.begin(), lines.end(),
                                     [](const std::string& l) { return l.starts_with("g/"); });
    REQUIRE(g_line != lines.end());
    const auto g_at = static_cast<std::size_t>(g_line - lines.begin());
    REQUIRE(g_at + 2 < lines.size());
    CHECK(lines[g_at + 1].starts_with("  a "));
    CHECK(lines[g_at + 2].starts_with("  b "));

    struct Expect {
        std::string name;
        std::string state;
    };
    for (const Expect& e :
         {Expect{"a", "running"}, Expect{"b", "stopped"}, Expect{"job", "done"}}) {
        const std::string line = line_of(lines, e.name, tree.out);
        const auto w = words(line);
        REQUIRE_MESSAGE(w.size() >= 2, line);
        CHECK_MESSAGE(w[1] == e.state, line);
        // The state word sits in the STATE column, under the header.
        CHECK_MESSAGE(line.compare(state_column, e.state.size(), e.state) == 0, line);
    }
    // The stopped member has no PID and no uptime: dashes, not a stale number.
    const auto b_words = words(line_of(lines, "b", tree.out));
    REQUIRE(b_words.size() >= 4);
    CHECK(b_words[2] == "-");
    CHECK(b_words[3] == "-");
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("status --tree follows a member's state change: started, then stopped again") {
    TempDir dir;
    dir.daemon_config("[groups.g]\nmembers = [\"a\", \"b\"]\n");
    dir.service("a", runner_toml());
    dir.service("b", "autostart = false\n" + runner_toml());
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "a", state_is("running"), 10s, "a runs");

    auto member_state = [&](const std::string& name) {
        CommandResult tree = run_ctl({"--socket", pkitd.socket(), "status", "--tree"});
        REQUIRE_MESSAGE(tree.exit_code == 0, tree.all());
        const auto w = words(line_of(lines_of(tree.out), name, tree.out));
        REQUIRE_MESSAGE(w.size() >= 2, tree.out);
        return w[1];
    };
    CHECK(member_state("b") == "stopped");
    json reply = client.request({{"cmd", "start"}, {"services", {"b"}}});
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    wait_status(client, "b", state_is("running"), 10s, "b runs");
    CHECK(member_state("b") == "running");
    reply = client.request({{"cmd", "stop"}, {"services", {"a"}}});
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    wait_status(client, "a", state_is("stopped"), 10s, "a stopped");
    CHECK(member_state("a") == "stopped");
    CHECK(pkitd.stop() == 0);
}
