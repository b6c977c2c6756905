// Checks across files: after targets, cycles (through `after` and group member
// order), groups, and users when pkitd is not root.

#include <pwd.h>
#include <unistd.h>
#include "tests/unit/config/config_doctest.hpp"

#include "tests/unit/config/temp_tree.hpp"

using namespace pkit::config;
using namespace pkit::config::test;
using Errors = std::vector<std::string>;

TEST_CASE("after names an existing service other than itself") {
    TempTree tree;
    tree.service("db", "command = [\"db\"]\n");
    tree.service("web", "command = [\"web\"]\nafter = [\"db\", \"dbb\", \"web\", \"cache\"]\n");
    CHECK(tree.errors() ==
          Errors{
              "services/web.toml:2:16: error: after: unknown service \"dbb\"; did you mean "
              "\"db\"?",
              "services/web.toml:2:23: error: after: \"web\" is this service itself; it cannot "
              "wait for itself",
              "services/web.toml:2:30: error: after: unknown service \"cache\"",
          });
}

TEST_CASE("a service whose file does not parse is still known to others") {
    TempTree tree;
    tree.service("db", "command = [\n");
    tree.service("web", "command = [\"web\"]\nafter = [\"db\"]\n");
    auto errors = tree.errors();
    REQUIRE(errors.size() == 1);
    CHECK(errors[0].starts_with("services/db.toml:"));
}

TEST_CASE("a dependency cycle is reported once, at the after key of its first service") {
    TempTree tree;
    tree.service("c", "command = [\"c\"]\nafter = [\"a\"]\n");
    tree.service("b", "command = [\"b\"]\n\nafter = [\"c\"]\n");
    tree.service("a", "command = [\"a\"]\nafter = [\"b\"]\n");
    tree.service("d", "command = [\"d\"]\nafter = [\"a\"]\n");  // depends on the cycle, not in it
    CHECK(tree.errors() ==
          Errors{"services/a.toml:2:1: error: dependency cycle: a -> b -> c -> a"});
}

TEST_CASE("two separate cycles are two errors; the shortest cycle is named") {
    TempTree tree;
    tree.service("a", "command = [\"a\"]\nafter = [\"c\", \"b\"]\n");
    tree.service("b", "command = [\"b\"]\nafter = [\"a\"]\n");
    tree.service("c", "command = [\"c\"]\nafter = [\"b\"]\n");
    tree.service("x", "command = [\"x\"]\nafter = [\"y\"]\n");
    tree.service("y", "command = [\"y\"]\nafter = [\"x\"]\n");
    CHECK(tree.errors() == Errors{
                               "services/a.toml:2:1: error: dependency cycle: a -> b -> a",
                               "services/x.toml:2:1: error: dependency cycle: x -> y -> x",
                           });
}

TEST_CASE("group member order counts in cycles") {
    TempTree tree;
    tree.daemon("[groups.backend]\nmembers = [\"db\", \"api\"]\n");
    tree.service("api", "command = [\"api\"]\n");
    tree.service("db", "command = [\"db\"]\nafter = [\"api\"]\n");
    // api follows db in the group; db waits for api: the cycle's first service in
    // name order is api, whose edge is the group's, so it is reported there.
    CHECK(tree.errors() == Errors{"pkitd.toml:2:18: error: dependency cycle: api -> db -> api "
                                  "(\"api\" follows \"db\" in groups.backend.members)"});

    TempTree other;
    other.daemon("[groups.backend]\nmembers = [\"a\", \"b\"]\n");
    other.service("a", "command = [\"a\"]\nafter = [\"b\"]\n");
    other.service("b", "command = [\"b\"]\n");
    CHECK(other.errors() == Errors{"services/a.toml:2:1: error: dependency cycle: a -> b -> a "
                                   "(\"b\" follows \"a\" in groups.backend.members)"});
}

TEST_CASE("groups: members defined, one group each, valid names, in name order") {
    TempTree tree;
    tree.daemon(R"([groups.b]
members = ["db", "api"]
[groups.a]
members = ["api", "nope", "api"]
[groups.c]
strategy = "rest_for_one"
members = []
[groups."bad name"]
members = ["db"]
[groups.d]
strategy = "one_for_everyone"
)");
    tree.service("api", "command = [\"api\"]\n");
    tree.service("db", "command = [\"db\"]\n");
    CHECK(tree.errors() ==
          Errors{
              "pkitd.toml:2:18: error: groups.b.members: \"api\" is already a member of group "
              "\"a\"; a service belongs to one group",
              "pkitd.toml:4:19: error: groups.a.members: unknown service \"nope\"",
              "pkitd.toml:4:27: error: groups.a.members: \"api\" is listed twice",
              "pkitd.toml:7:11: error: groups.c.members: must not be empty",
              "pkitd.toml:8:1: error: groups: \"bad name\" is not a valid group name (1 to 64 "
              "letters, digits, \"_\", \".\" or \"-\", starting with a letter or digit)",
              "pkitd.toml:10:1: error: missing key \"members\" in [groups.d]",
              "pkitd.toml:11:12: error: groups.d.strategy: unknown value \"one_for_everyone\" "
              "(expected \"one_for_one\", \"one_for_all\" or \"rest_for_one\")",
          });
}

TEST_CASE("pkitd.toml keys read into the daemon spec") {
    using namespace std::chrono_literals;
    TempTree tree;
    tree.daemon(R"(socket = "/run/pkit/pkitd.sock"
control_users = ["ops", 1001]
control_group = "pkit"
shutdown_timeout = "10s"
[storm]
pause = "10s"
[root]
max_restarts = 2
within = "30s"
[groups.web]
members = ["b", "a"]
[groups.backend]
strategy = "one_for_all"
members = ["c"]
max_restarts = 3
within = 30
)");
    tree.service("a", "command = [\"a\"]\n");
    tree.service("b", "command = [\"b\"]\n");
    tree.service("c", "command = [\"c\"]\n");
    auto result = tree.load();
    REQUIRE(result.has_value());
    const DaemonSpec& daemon = result->daemon;
    CHECK(daemon.socket == "/run/pkit/pkitd.sock");
    CHECK(daemon.control_users ==
          std::vector<Principal>{Principal{.name = "ops"}, Principal{.id = 1001}});
    CHECK(daemon.control_group == Principal{.name = "pkit"});
    CHECK(daemon.shutdown_timeout == 10s);
    CHECK(daemon.storm == StormSpec{.pause = 10s, .threshold = 50.0, .decay = 60s});
    CHECK(daemon.root == RootSpec{.max_restarts = 2, .within = 30s});
    REQUIRE(daemon.groups.size() == 2);
    CHECK(daemon.groups[0] == GroupSpec{.name = "backend",
                                        .strategy = Strategy::one_for_all,
                                        .members = {"c"},
                                        .max_restarts = 3,
                                        .within = 30s});
    CHECK(daemon.groups[1] == GroupSpec{.name = "web", .members = {"b", "a"}});
    CHECK(result->group_of("a") == &daemon.groups[1]);
    CHECK(result->group_of("c") == &daemon.groups[0]);
    CHECK(result->find_group("web") == &daemon.groups[1]);
    CHECK(result->find_group("nope") == nullptr);
}

TEST_CASE("bad pkitd.toml values") {
    TempTree tree;
    tree.daemon(R"(socket = ""
control_users = ["", true]
control_group = -1
shutdown_timeout = -1
sockett = "x"
[storm]
threshold = -5
[root]
max_restarts = -1
[groups.g]
members = ["a"]
max_restarts = -2
)");
    tree.service("a", "command = [\"a\"]\n");
    CHECK(tree.errors() ==
          Errors{
              "pkitd.toml:1:10: error: socket: must not be empty",
              "pkitd.toml:2:18: error: control_users: must not be empty",
              "pkitd.toml:2:22: error: control_users: expected a name or a numeric id, got a "
              "boolean",
              "pkitd.toml:3:17: error: control_group: must be between 0 and 4294967294, got -1",
              "pkitd.toml:4:20: error: shutdown_timeout: must not be negative",
              "pkitd.toml:5:1: error: unknown key \"sockett\"; did you mean \"socket\"?",
              "pkitd.toml:7:13: error: storm.threshold: must be a finite number above 0, got -5",
              "pkitd.toml:9:16: error: root.max_restarts: must be at least 0, got -1",
              "pkitd.toml:12:16: error: groups.g.max_restarts: must be at least -1, got -2",
          });
}

TEST_CASE("without root, user and group must be pkitd's own") {
    std::string me = std::to_string(::getuid());
    std::string my_group = std::to_string(::getgid());
    CHECK(
        service_errors("command = [\"x\"]\nuser = " + me + "\ngroup = " + my_group + "\n").empty());
    if (passwd* pw = ::getpwuid(::getuid())) {
        CHECK(service_errors(std::string("command = [\"x\"]\nuser = \"") + pw->pw_name + "\"\n")
                  .empty());
    }
    std::string other = std::to_string(::getuid() + 1);
    CHECK(service_errors("command = [\"x\"]\nuser = " + other + "\n") ==
          Errors{"services/web.toml:2:8: error: user " + other + ": pkitd runs as uid " + me +
                 ", not root; it cannot switch users"});
    CHECK(service_errors("command = [\"x\"]\nuser = \"no-such-user-pkit\"\n") ==
          Errors{"services/web.toml:2:8: error: user \"no-such-user-pkit\": pkitd runs as uid " +
                 me + ", not root; it cannot switch users"});
    CHECK(service_errors("command = [\"x\"]\ngroup = \"no-such-group-pkit\"\n") ==
          Errors{"services/web.toml:2:9: error: group \"no-such-group-pkit\": pkitd runs as gid " +
                 my_group + ", not root; it cannot switch groups"});

    // As root anything goes, even names that do not exist yet (a launch error later).
    TempTree tree;
    tree.service("web", "command = [\"x\"]\nuser = \"no-such-user-pkit\"\ngroup = 12345\n");
    LoadOptions root = test_options();
    root.as_root = true;
    root.uid = 0;
    auto result = tree.load(root);
    REQUIRE(result.has_value());
    CHECK(result->services[0].process->user == Principal{.name = "no-such-user-pkit"});
    CHECK(result->services[0].process->group == Principal{.id = 12345});
}
