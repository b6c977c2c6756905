// `instances`, variables and pkitd.toml's environment keys (SPEC §13) at load time.

#include "tests/unit/config/config_doctest.hpp"

#include <cstdlib>

#include "config/instances.hpp"
#include "tests/unit/config/temp_tree.hpp"

using namespace pkit::config;
using namespace pkit::config::test;
using Errors = std::vector<std::string>;

namespace {

std::vector<std::string> names(const Tree& tree) {
    std::vector<std::string> out;
    for (const auto& service : tree.services) {
        out.push_back(service.name);
    }
    return out;
}

}  // namespace

TEST_CASE("instances = N defines NAME@1 ... NAME@N, each a full service") {
    TempTree tree;
    tree.service("db", "command = [\"db\"]\n");
    tree.service("web", "command = [\"web\"]\ninstances = 3\nafter = [\"db\"]\n");
    tree.service("zz", "command = [\"zz\"]\nafter = [\"web\"]\n");
    auto loaded = tree.load();
    REQUIRE(loaded);
    CHECK(names(*loaded) == Errors{"db", "web@1", "web@2", "web@3", "zz"});
    CHECK(loaded->services[2].instance == 2);
    CHECK(loaded->services[2].after == Errors{"db"});
    CHECK(loaded->services[0].instance == 0);
    // `after` naming the file waits for every instance: kept as written, so that pkitd
    // resolves it to the instances the file has at the time (scale adds some).
    CHECK(loaded->services[4].after == Errors{"web"});
}

TEST_CASE("the instances scale adds are not stamped as a parse; those kept are") {
    // ServiceSpec::stamp: only the loader's copies of a parse carry its number.
    TempTree tree;
    tree.service("web", "command = [\"web\"]\ninstances = 2\n");
    auto loaded = tree.load();
    REQUIRE(loaded.has_value());
    const std::uint64_t parse = loaded->services.at(0).stamp.number;
    CHECK(parse != 0);
    CHECK(loaded->services.at(1).stamp.number == parse);
    set_instances(*loaded, "web", 3);
    REQUIRE(names(*loaded) == std::vector<std::string>{"web@1", "web@2", "web@3"});
    CHECK(loaded->services[0].stamp.number == parse);
    CHECK(loaded->services[1].stamp.number == parse);
    CHECK(loaded->services[2].stamp.number == 0);
    CHECK(loaded->services[2].instance == 3);
}

TEST_CASE("instances = 1 is a plain service; NAME@I and group members work as names") {
    TempTree tree;
    tree.service("one", "command = [\"x\"]\ninstances = 1\n");
    tree.service("web", "command = [\"web\"]\ninstances = 2\n");
    tree.service("api", "command = [\"x\"]\nafter = [\"web@2\"]\n");
    tree.daemon("[groups.g]\nmembers = [\"web\", \"one\"]\n");
    auto loaded = tree.load();
    REQUIRE(loaded);
    CHECK(names(*loaded) == Errors{"api", "one", "web@1", "web@2"});
    CHECK(loaded->find_service("one")->instance == 0);
    CHECK(loaded->daemon.groups[0].members == Errors{"web", "one"});
    CHECK(loaded->group_of("web@2") == &loaded->daemon.groups[0]);
    CHECK(loaded->group_of("api") == nullptr);
    CHECK(loaded->services[0].after == Errors{"web@2"});
}

TEST_CASE("a file's name in after and members is checked as its instances") {
    TempTree tree;
    tree.service("web", "command = [\"web\"]\ninstances = 2\nafter = [\"web\"]\n");
    auto errors = tree.errors();
    REQUIRE(errors.size() == 3);
    CHECK(errors[0].starts_with("services/web.toml:3:1: error: dependency cycle: web@1 -> web@2"));
    CHECK(
        errors[1].starts_with("services/web.toml:3:10: error: after: \"web@1\" is this "
                              "service itself"));
    TempTree twice;
    twice.service("web", "command = [\"web\"]\ninstances = 2\n");
    twice.daemon("[groups.g]\nmembers = [\"web\", \"web@2\"]\n");
    errors = twice.errors();
    REQUIRE(errors.size() == 1);
    CHECK(errors[0].find("\"web@2\" is listed twice") != std::string::npos);
}

TEST_CASE("bad instances values, and after a missing instance, are positioned errors") {
    for (const char* value : {"0", "1001", "2.5", "\"3\"", "-1"}) {
        CAPTURE(value);
        auto errors = service_errors(std::string("command = [\"x\"]\ninstances = ") + value + "\n");
        REQUIRE(errors.size() == 1);
        CHECK(errors[0].starts_with("services/web.toml:2:13: error: instances: "));
    }
    TempTree tree;
    tree.service("web", "command = [\"web\"]\ninstances = 2\n");
    tree.service("api", "command = [\"x\"]\nafter = [\"web@3\"]\n");
    auto errors = tree.errors();
    REQUIRE(errors.size() == 1);
    CHECK(errors[0].starts_with("services/api.toml:2:10: error: after: unknown service \"web@3\""));
}

TEST_CASE("a file name with @ is refused") {
    TempTree tree;
    tree.service("web@1", "command = [\"web\"]\n");
    auto errors = tree.errors();
    REQUIRE(errors.size() == 1);
    CHECK(errors[0].starts_with("services/web@1.toml:1:1: error: "));
}

TEST_CASE("an unterminated ${ and an empty ${} are errors at their value, wherever they expand") {
    CHECK(service_errors("command = [\"x\", \"--port=${PORT\"]\n") ==
          Errors{"services/web.toml:1:17: error: command: \"${\" without a closing \"}\" (at "
                 "character 8 of the value)"});
    CHECK(service_errors("command = [\"x\"]\ncwd = \"/srv/${}\"\n") ==
          Errors{"services/web.toml:2:7: error: cwd: \"${}\" names no variable (at character 6 of "
                 "the value)"});
    CHECK(service_errors("command = [\"x\"]\nenv = { A = \"${B:-${}}\" }\n").size() == 1);
    CHECK(service_errors("command = [\"x\"]\nenv_file = [\"${X\"]\n").size() == 1);
    CHECK(service_errors("command = [\"x\"]\n[health]\ntcp = \"127.0.0.1:${P\"\ninterval = 1\n")
              .size() == 1);
    CHECK(service_errors("command = [\"x\"]\n[ready]\nexec = [\"x\", \"${}\"]\n").size() == 1);
    // Keys that do not expand keep their text as it is.
    CHECK(service_errors("command = [\"sh\", \"-c\", \"echo $HOME $$ $\"]\n[stop_when]\n"
                         "output_matches = \"x${\"\n")
              .empty());
}

TEST_CASE("a probe target with a variable is checked once expanded, not at load") {
    ServiceSpec spec = service_spec(
        "command = [\"x\"]\n[ready]\ntcp = \"127.0.0.1:${PORT:-80}\"\n[health]\nhttp = "
        "\"${URL}\"\ninterval = 1\n");
    CHECK(spec.ready->probe.target == "127.0.0.1:${PORT:-80}");
    CHECK(spec.health->target == "${URL}");
}

TEST_CASE("pkitd.toml takes env and env_file, and checks their variables") {
    TempTree tree;
    tree.service("web", "command = [\"x\"]\n");
    tree.daemon("env_file = \"/etc/pkit/common.env\"\n[env]\nTZ = \"UTC\"\nP = \"${HOME}/p\"\n");
    auto loaded = tree.load();
    REQUIRE(loaded);
    CHECK(loaded->daemon.env ==
          std::map<std::string, std::string>{{"P", "${HOME}/p"}, {"TZ", "UTC"}});
    CHECK(loaded->daemon.env_files == Errors{"/etc/pkit/common.env"});
    TempTree bad;
    bad.service("web", "command = [\"x\"]\n");
    bad.daemon("env_file = [\"a\", 3]\n[env]\nX = \"${\"\n");
    CHECK(bad.errors().size() == 2);
}

TEST_CASE("--check's warnings: variables no known source defines, at their value") {
    ::setenv("PKIT_TEST_DEFINED", "1", 1);
    ::unsetenv("PKIT_TEST_NOWHERE");
    ::unsetenv("PKIT_TEST_ALSO");
    TempTree tree;
    tree.service("web",
                 "command = [\"x\", \"${PKIT_TEST_NOWHERE}\", \"${PKIT_TEST_DEFINED}\", "
                 "\"${PKIT_SERVICE}\", \"${NOPE:-ok}\", \"${OWN}\", \"${COMMON}\"]\n"
                 "cwd = \"${PKIT_TEST_ALSO:-${PKIT_TEST_NOWHERE}}\"\n"
                 "env = { OWN = \"1\" }\ninstances = 2\n");
    tree.daemon("[env]\nCOMMON = \"c\"\n");
    std::vector<Diagnostic> warnings;
    LoadOptions options = test_options();
    options.warnings = &warnings;
    REQUIRE(tree.load(options));
    Errors texts;
    for (auto& warning : warnings) {
        CHECK(warning.warning);
        texts.push_back(warning.to_string().substr(tree.root().string().size() + 1));
    }
    CHECK(texts ==
          Errors{"services/web.toml:1:17: warning: command: variable \"PKIT_TEST_NOWHERE\" is not "
                 "defined by pkitd's environment, pkitd.toml's [env] or the service's env; a run "
                 "would fail with undefined_variable",
                 "services/web.toml:2:7: warning: cwd: variable \"PKIT_TEST_NOWHERE\" is not "
                 "defined by pkitd's environment, pkitd.toml's [env] or the service's env; a run "
                 "would fail with undefined_variable"});
    // Without the option, a load computes none.
    warnings.clear();
    REQUIRE(tree.load());
    CHECK(warnings.empty());
}
