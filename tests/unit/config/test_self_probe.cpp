// SPEC §21: a start_first service whose [ready] or [health] probe reaches one of its own
// [[listen]] sockets gets a warning at the probe's key, from every load that asks for
// load_warnings (pkitd's) and from --check's; the tree stays valid.

#include "config/loader.hpp"
#include "tests/unit/config/config_doctest.hpp"
#include "tests/unit/config/temp_tree.hpp"

using namespace pkit::config;
using namespace pkit::config::test;

namespace {

struct Loaded {
    bool valid = false;
    std::vector<std::string> warnings;  // relative to the tree's root
};

Loaded load_warnings_of(const TempTree& tree) {
    std::vector<Diagnostic> warnings;
    LoadOptions options = test_options();
    options.load_warnings = &warnings;
    Loaded out;
    out.valid = tree.load(options).has_value();
    const std::string prefix = tree.root().string() + "/";
    for (const Diagnostic& d : warnings) {
        std::string text = d.to_string();
        if (text.starts_with(prefix)) {
            text.erase(0, prefix.size());
        }
        out.warnings.push_back(text);
    }
    return out;
}

// A start_first service with one [[listen]] entry `listen` (a tcp address, or
// "unix:PATH") and `probe` (lines of [ready] or [health] after their header).
std::string service(const std::string& listen, const std::string& section, const std::string& probe,
                    const std::string& order = "start_first") {
    std::string entry = listen.starts_with("unix:") ? "unix = \"" + listen.substr(5) + "\""
                                                    : "tcp = \"" + listen + "\"";
    return "command = [\"/bin/true\"]\n"
           "[[listen]]\n" +
           entry + "\n[restart]\norder = \"" + order + "\"\n[" + section + "]\n" + probe + "\n";
}

bool warns(const std::string& listen, const std::string& section, const std::string& probe,
           const std::string& order = "start_first") {
    TempTree tree;
    tree.service("web", service(listen, section, probe, order));
    Loaded loaded = load_warnings_of(tree);
    REQUIRE(loaded.valid);
    return !loaded.warnings.empty();
}

}  // namespace

TEST_CASE("a start_first [ready] probe of its own [[listen]] socket is warned at the probe key") {
    TempTree tree;
    tree.service("web", service("0.0.0.0:8000", "ready", "http = \"http://127.0.0.1:8000/\""));
    Loaded loaded = load_warnings_of(tree);
    CHECK(loaded.valid);
    REQUIRE(loaded.warnings.size() == 1);
    const std::string& w = loaded.warnings.front();
    CHECK_MESSAGE(w.starts_with("services/web.toml:7:1: warning: ready.http: "
                                "\"http://127.0.0.1:8000/\" reaches this service's own "
                                "[[listen]] socket \"0.0.0.0:8000\" (line 2)"),
                  w);
    CHECK(w.find("use [ready] notify = true") != std::string::npos);
    CHECK(w.find("--preload") != std::string::npos);
}

TEST_CASE("host and port are compared as the kernel routes them") {
    // The socket's address against the probe's: the same socket, or not.
    CHECK(warns("0.0.0.0:8000", "ready", "tcp = \"127.0.0.1:8000\""));
    CHECK(warns("0.0.0.0:8000", "ready", "tcp = \"localhost:8000\""));
    CHECK(warns("0.0.0.0:8000", "ready", "tcp = \"0.0.0.0:8000\""));
    CHECK(warns("[::]:8000", "ready", "tcp = \"127.0.0.1:8000\""));
    CHECK(warns("[::]:8000", "ready", "tcp = \"[::1]:8000\""));
    CHECK(warns("127.0.0.1:8000", "ready", "tcp = \"localhost:8000\""));
    CHECK(warns("127.0.0.1:8000", "ready", "tcp = \"LOCALHOST:8000\""));
    CHECK(warns("[::1]:8000", "ready", "tcp = \"localhost:8000\""));
    CHECK(warns("10.1.2.3:8000", "ready", "tcp = \"10.1.2.3:8000\""));
    CHECK(warns("0.0.0.0:80", "ready", "http = \"http://localhost/health\""));
    CHECK(warns("0.0.0.0:8000", "ready", "http = \"http://[::1]:8000\""));

    CHECK_FALSE(warns("0.0.0.0:8000", "ready", "tcp = \"127.0.0.1:8001\""));
    CHECK_FALSE(warns("127.0.0.1:8000", "ready", "tcp = \"127.0.0.2:8000\""));
    CHECK_FALSE(warns("10.1.2.3:8000", "ready", "tcp = \"127.0.0.1:8000\""));
    CHECK_FALSE(warns("0.0.0.0:8000", "ready", "tcp = \"db.example:8000\""));
    CHECK_FALSE(warns("0.0.0.0:8000", "ready", "http = \"http://127.0.0.1/\""));
    // Known only at each attempt.
    CHECK_FALSE(warns("0.0.0.0:8000", "ready", "tcp = \"127.0.0.1:${PORT:-8000}\""));
}

TEST_CASE("a file probe of its own Unix socket's path is the same socket") {
    CHECK(warns("unix:/run/app/web.sock", "ready", "file = \"/run/app/web.sock\""));
    CHECK(warns("unix:/run/app/web.sock", "ready", "file = \"/run/app/./web.sock\""));
    CHECK_FALSE(warns("unix:/run/app/web.sock", "ready", "file = \"/run/app/ready\""));
}

TEST_CASE("[health] is warned too, with its own advice") {
    TempTree tree;
    tree.service("web", service("0.0.0.0:8000", "health",
                                "interval = \"5s\"\nhttp = \"http://127.0.0.1:8000/\""));
    Loaded loaded = load_warnings_of(tree);
    REQUIRE(loaded.warnings.size() == 1);
    CHECK(loaded.warnings.front().starts_with("services/web.toml:8:1: warning: health.http: "));
    CHECK(loaded.warnings.front().find("[health] watchdog") != std::string::npos);
}

TEST_CASE("no warning where the old run cannot answer for the new one") {
    CHECK_FALSE(warns("0.0.0.0:8000", "ready", "notify = true"));
    CHECK_FALSE(warns("0.0.0.0:8000", "ready", "http = \"http://127.0.0.1:8000/\"", "stop_first"));
    TempTree tree;
    tree.service("web",
                 "command = [\"/bin/true\"]\n[restart]\norder = \"start_first\"\n"
                 "[ready]\ntcp = \"127.0.0.1:8000\"\n");
    CHECK(load_warnings_of(tree).warnings.empty());
}

TEST_CASE("the warning goes to --check's sink and pkitd's, once a file with instances") {
    TempTree tree;
    tree.service("web",
                 "instances = 3\n" + service("0.0.0.0:8000", "ready", "tcp = \"127.0.0.1:8000\""));
    std::vector<Diagnostic> check;
    std::vector<Diagnostic> load;
    LoadOptions options = test_options();
    SUBCASE("both sinks") {
        options.warnings = &check;
        options.load_warnings = &load;
        REQUIRE(tree.load(options));
        CHECK(check.size() == 1);
        CHECK(load == check);
    }
    SUBCASE("one sink for both") {
        options.warnings = &check;
        options.load_warnings = &check;
        REQUIRE(tree.load(options));
        CHECK(check.size() == 1);
    }
    SUBCASE("none asked for") {
        REQUIRE(tree.load(options));
    }
    for (const Diagnostic& d : check) {
        CHECK(d.warning);
    }
}

TEST_CASE("a cached parse keeps its warning for the next load") {
    TempTree tree;
    tree.service("web", service("0.0.0.0:8000", "ready", "tcp = \"127.0.0.1:8000\""));
    LoadCache cache;
    for (int load = 0; load < 2; ++load) {
        std::vector<Diagnostic> warnings;
        LoadOptions options = test_options();
        options.load_warnings = &warnings;
        REQUIRE(load_tree(tree.root(), options, &cache));
        CHECK(warnings.size() == 1);
    }
}
