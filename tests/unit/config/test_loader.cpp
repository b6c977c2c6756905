// load_tree(): files, names, syntax errors, defaults, and equality for reload.

#include "tests/unit/config/config_doctest.hpp"

#include "tests/unit/config/temp_tree.hpp"

using namespace pkit::config;
using namespace pkit::config::test;
using namespace std::chrono_literals;
using Errors = std::vector<std::string>;

TEST_CASE("a minimal service has exactly the default spec") {
    TempTree tree;
    tree.service("web", "command = [\"/bin/true\"]\n");
    auto result = tree.load();
    REQUIRE(result.has_value());
    REQUIRE(result->services.size() == 1);
    ServiceSpec expected;
    expected.name = "web";
    expected.file = (tree.root() / "services" / "web.toml").string();
    expected.command = {"/bin/true"};
    CHECK(result->services[0] == expected);
    CHECK(result->daemon == DaemonSpec{});
    CHECK(result->dir == tree.root().string());
    // Spot checks of the contract's defaults, in case model.hpp drifts.
    const ServiceSpec& spec = result->services[0];
    CHECK(spec.success_codes == ExitCodes{0});
    CHECK(spec.autostart);
    CHECK(spec.restart.policy == RestartPolicy::on_crash);
    CHECK(spec.restart.max_restarts == -1);
    CHECK(spec.restart.backoff_initial == 200ms);
    CHECK(spec.restart.max_backoff == 30s);
    CHECK(spec.restart.reset_after == 60s);
    CHECK(spec.storm->threshold == 5.0);
    CHECK_FALSE(spec.storm->enabled());
    CHECK(spec.stop.signal == SIGTERM);
    CHECK(spec.stop.timeout == 5s);
    CHECK(spec.output.max_bytes == 256 * 1024);
    CHECK(spec.ready->timeout == 30s);
    CHECK_FALSE(spec.ready->enabled());
    CHECK_FALSE(spec.health->enabled());
    CHECK(result->daemon.storm.threshold == 50.0);
    CHECK(result->daemon.root.within == 60s);
}

TEST_CASE("services load in name order; other files are ignored") {
    TempTree tree;
    tree.service("b", "command = [\"b\"]\n");
    tree.service("a", "command = [\"a\"]\n");
    tree.service("C", "command = [\"c\"]\n");
    tree.write("services/README", "not toml at all [");
    tree.write("services/web.toml.swp", "junk");
    auto result = tree.load();
    REQUIRE(result.has_value());
    REQUIRE(result->services.size() == 3);
    CHECK(result->services[0].name == "C");
    CHECK(result->services[1].name == "a");
    CHECK(result->services[2].name == "b");
    CHECK(result->find_service("a") == &result->services[1]);
    CHECK(result->find_service("zz") == nullptr);
}

TEST_CASE("an empty services directory is an empty tree; a missing DIR is an error") {
    TempTree tree;
    tree.daemon("socket = \"/tmp/x.sock\"\n");
    auto result = tree.load();
    REQUIRE(result.has_value());
    CHECK(result->services.empty());
    CHECK(result->daemon.socket == "/tmp/x.sock");

    auto missing = load_tree(tree.root() / "nope", test_options());
    REQUIRE_FALSE(missing.has_value());
    REQUIRE(missing.error().size() == 1);
    CHECK(missing.error()[0].to_string() ==
          (tree.root() / "nope").string() +
              ":1:1: error: cannot read the configuration directory: No such file or directory");
}

TEST_CASE("FILE in messages is built from DIR as given") {
    TempTree tree;
    tree.service("web", "command = []\n");
    auto result = load_tree(tree.root().string() + "/", test_options());
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error()[0].file == tree.root().string() + "/services/web.toml");
}

TEST_CASE("a file name that is not a service name is an error at 1:1") {
    TempTree tree;
    tree.service("bad name", "command = [\"x\"]\n");
    tree.service("-dash", "command = [\"x\"]\n");
    tree.service(std::string(65, 'a'), "command = [\"x\"]\n");
    tree.service(std::string(64, 'b'), "command = [\"x\"]\n");
    std::string rule =
        ": the file name without \".toml\" is not a valid service name (1 to 64 letters, "
        "digits, \"_\", \".\" or \"-\", starting with a letter or digit)";
    CHECK(tree.errors() == Errors{
                               "services/-dash.toml:1:1: error: \"-dash.toml\"" + rule,
                               "services/" + std::string(65, 'a') + ".toml:1:1: error: \"" +
                                   std::string(65, 'a') + ".toml\"" + rule,
                               "services/bad name.toml:1:1: error: \"bad name.toml\"" + rule,
                           });
}

TEST_CASE("TOML syntax errors and unreadable files are positioned diagnostics") {
    TempTree tree;
    tree.service("a", "command = [\"x\"\n");
    tree.service("b", "command = [\"x\"]\ncommand = [\"y\"]\n");
    tree.service("c", "command = \"\\q\"\n");
    tree.write("services/d.toml/inner", "");
    CHECK(tree.errors() ==
          Errors{
              "services/a.toml:1:16: error: invalid TOML while parsing array: encountered "
              "end-of-file",
              "services/b.toml:2:11: error: invalid TOML while parsing key-value pair: cannot "
              "redefine existing array 'command'",
              "services/c.toml:1:13: error: invalid TOML while parsing string: unknown escape "
              "sequence '\\q'",
              "services/d.toml:1:1: error: not a regular file (a directory): only regular "
              "files are read",
          });
}

TEST_CASE("a missing command is reported at 1:1") {
    CHECK(service_errors("cwd = \"/\"\n") ==
          Errors{"services/web.toml:1:1: error: missing required key \"command\""});
}

TEST_CASE("every problem of every file comes back in one pass, in file order") {
    TempTree tree;
    tree.daemon("socket = 5\nshutdown_timeout = \"soon\"\n");
    tree.service("web", R"(command = "web"
after = ["dbb"]
[restart]
policy = "sometimes"
max_backof = "1s"
)");
    tree.service("api", "command = [\"\"]\ntimeout = -1\n");
    CHECK(tree.errors() ==
          Errors{
              "pkitd.toml:1:10: error: socket: expected a string, got an integer",
              "pkitd.toml:2:20: error: shutdown_timeout: \"soon\" is not a duration (use "
              "seconds as a number, or a string like \"250ms\", \"5s\", \"1m30s\", \"2h\")",
              "services/api.toml:1:12: error: command: the program (the first element) must not "
              "be empty",
              "services/api.toml:2:11: error: timeout: must not be negative",
              "services/web.toml:1:11: error: command: expected an array of strings, got a "
              "string",
              "services/web.toml:2:10: error: after: unknown service \"dbb\"",
              "services/web.toml:4:10: error: restart.policy: unknown value \"sometimes\" "
              "(expected \"on_crash\", \"always\" or \"never\")",
              "services/web.toml:5:1: error: unknown key \"max_backof\" in [restart]; did you "
              "mean \"max_backoff\"?",
          });
}

TEST_CASE("a comment or formatting change is no change; a value change is") {
    TempTree before;
    before.service("web", "command = [\"/bin/web\", \"-v\"]\n[restart]\npolicy = \"always\"\n");
    before.daemon("[groups.g]\nmembers = [\"web\"]\n");
    TempTree after;
    after.write("services/web.toml",
                "# the web server\ncommand = [ \"/bin/web\",\n  \"-v\", ]\n[restart]\n"
                "policy   =   'always'  # why not\n");
    after.daemon("# groups\n[groups]\ng = { members = [ \"web\" ] }\n");
    auto a = before.load();
    auto b = after.load();
    REQUIRE(a.has_value());
    REQUIRE(b.has_value());
    CHECK(a->daemon == b->daemon);
    CHECK(a->services[0].command == b->services[0].command);
    CHECK(a->services[0].restart == b->services[0].restart);
    // `file` differs only because the trees live in different directories.
    b->services[0].file = a->services[0].file;
    CHECK(a->services[0] == b->services[0]);

    TempTree changed;
    changed.service("web", "command = [\"/bin/web\", \"-v\"]\n[restart]\npolicy = \"never\"\n");
    auto c = changed.load();
    REQUIRE(c.has_value());
    c->services[0].file = a->services[0].file;
    CHECK_FALSE(a->services[0] == c->services[0]);
}
