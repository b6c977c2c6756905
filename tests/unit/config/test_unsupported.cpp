// reject_unsupported: keys whose behaviour pkitd lacks yet are refused, positioned,
// only when asked; their values are checked either way.

#include "tests/unit/config/config_doctest.hpp"

#include "tests/unit/config/temp_tree.hpp"

using namespace pkit::config;
using namespace pkit::config::test;
using Errors = std::vector<std::string>;

namespace {

LoadOptions rejecting() {
    LoadOptions options = test_options();
    options.reject_unsupported = true;
    return options;
}

void write_tree(const TempTree& tree) {
    tree.daemon(R"(control_users = ["ops"]
control_group = "pkit"
[storm]
pause = "10s"
[root]
max_restarts = 1
[groups.g]
members = ["web"]
)");
    tree.service("web", R"(command = ["x"]
escalate = true
[storm]
pause = "1s"
[stop_when]
exit_codes = [0]
[give_up_when]
exit_codes = [78]
[health]
tcp = "h:1"
interval = 1
[ready]
notify = true
)");
}

}  // namespace

TEST_CASE("unsupported keys are refused only with reject_unsupported") {
    TempTree tree;
    write_tree(tree);
    CHECK(tree.errors().empty());
    CHECK(tree.errors(rejecting()) ==
          Errors{
              "pkitd.toml:5:1: error: \"[root]\" is not supported yet",
              "pkitd.toml:7:1: error: \"[groups]\" is not supported yet",
              "services/web.toml:2:1: error: \"escalate\" is not supported yet",
          });
}

TEST_CASE("unsupported keys are still validated, and supported ones pass") {
    TempTree tree;
    tree.service("web", "command = [\"x\"]\n[stop]\nsignal = \"HUP\"\nhealth = { tcp = \"h\" }\n");
    CHECK(tree.errors(rejecting()) ==
          Errors{
              "services/web.toml:4:1: error: unknown key \"health\" in [stop]",
          });
    TempTree inline_health;
    inline_health.service("web", "command = [\"x\"]\nhealth = { tcp = \"h\", interval = 1 }\n");
    CHECK(inline_health.errors(rejecting()) ==
          Errors{
              "services/web.toml:2:18: error: health.tcp: \"h\" is not \"host:port\" (e.g. "
              "\"127.0.0.1:8080\")",
          });
    TempTree bad_escalate;
    bad_escalate.service("web", "command = [\"x\"]\nescalate = \"yes\"\n");
    CHECK(bad_escalate.errors(rejecting()) ==
          Errors{
              "services/web.toml:2:1: error: \"escalate\" is not supported yet",
              "services/web.toml:2:12: error: escalate: expected true or false, got a string",
          });
    TempTree plain;
    plain.service(
        "web", "command = [\"x\"]\n[restart]\npolicy = \"always\"\n[output]\nforward = \"raw\"\n");
    CHECK(plain.errors(rejecting()).empty());
}
