// The tree in status (SPEC §5, §10): `group` in the JSON status, the GROUP column of
// `pkitctl status` when a group is defined, and `status --tree` drawing each group
// with its members in start order.

#include <sstream>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// The first whitespace-separated words of `line`.
std::vector<std::string> first_words(const std::string& line, std::size_t n) {
    std::vector<std::string> out;
    std::istringstream in(line);
    for (std::string w; out.size() < n && in >> w;) {
        out.push_back(w);
    }
    return out;
}

}  // namespace

TEST_CASE("status shows each service's group, the GROUP column and the group tree") {
    TempDir dir;
    dir.daemon_config(
        "[groups.backend]\nstrategy = \"rest_for_one\"\n"
        "members = [\"db\", \"api\"]\n");
    dir.service("api", runner_toml());
    dir.service("db", runner_toml());
    dir.service("web", runner_toml());
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    for (const std::string name : {"api", "db", "web"}) {
        wait_status(client, name, state_is("running"), 10s, name + " runs");
    }
    CHECK(status(client, "db")["group"] == "backend");
    CHECK(status(client, "web")["group"].is_null());

    CommandResult table = run_ctl({"--socket", pkitd.socket(), "status"});
    REQUIRE_MESSAGE(table.exit_code == 0, table.all());
    std::vector<std::string> rows = lines_of(table.out);
    REQUIRE_MESSAGE(rows.size() == 4, table.out);
    CHECK(first_words(rows[0], 3) == std::vector<std::string>{"NAME", "GROUP", "STATE"});
    // Start order: db before api (member order), web in name order among the rest.
    CHECK(first_words(rows[1], 3) == std::vector<std::string>{"db", "backend", "running"});
    CHECK(first_words(rows[2], 3) == std::vector<std::string>{"api", "backend", "running"});
    CHECK(first_words(rows[3], 3) == std::vector<std::string>{"web", "-", "running"});

    CommandResult tree = run_ctl({"--socket", pkitd.socket(), "status", "--tree"});
    REQUIRE_MESSAGE(tree.exit_code == 0, tree.all());
    std::vector<std::string> drawn = lines_of(tree.out);
    REQUIRE_MESSAGE(drawn.size() == 5, tree.out);
    CHECK(first_words(drawn[0], 2) == std::vector<std::string>{"NAME", "STATE"});
    CHECK(drawn[1].starts_with("backend"));
    CHECK_MESSAGE(drawn[2].starts_with("  db "), tree.out);
    CHECK_MESSAGE(drawn[3].starts_with("  api "), tree.out);
    CHECK_MESSAGE(drawn[4].starts_with("web "), tree.out);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("status has no GROUP column when no group is defined") {
    TempDir dir;
    dir.service("web", runner_toml());
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "web", state_is("running"), 10s, "web runs");
    CommandResult table = run_ctl({"--socket", pkitd.socket(), "status"});
    REQUIRE_MESSAGE(table.exit_code == 0, table.all());
    CHECK(table.out.find("GROUP") == std::string::npos);
    CHECK(first_words(lines_of(table.out).at(0), 2) == std::vector<std::string>{"NAME", "STATE"});
    CHECK(pkitd.stop() == 0);
}
