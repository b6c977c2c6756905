// load_text(): one file's text, loaded as load_tree() loads a directory holding only
// that file, without touching the disk (the fuzz target tests/fuzz/fuzz_config.cpp
// calls it).

#include "tests/unit/config/config_doctest.hpp"

#include "tests/unit/config/temp_tree.hpp"

using namespace pkit::config;
using namespace pkit::config::test;

namespace {

std::vector<std::string> lines(const LoadResult& result) {
    std::vector<std::string> out;
    if (!result) {
        for (const Diagnostic& diagnostic : result.error()) {
            out.push_back(diagnostic.to_string());
        }
    }
    return out;
}

}  // namespace

TEST_CASE("load_text gives what load_tree gives for a tree of that one service file") {
    const std::string texts[] = {
        "command = [\"/bin/true\"]\nafter = [\"web\"]\n[restart]\npolicy = \"always\"\n",
        "command = [\"a\"]\nafter = [\"db\"]\n[stop]\nsignal = \"SIGNOPE\"\ntimeout = -1\n",
        "command = [\"a\"]\n[restart\n",
        "",
    };
    for (const std::string& text : texts) {
        CAPTURE(text);
        TempTree tree;
        tree.service("web", text);
        const std::string file = (tree.root() / "services" / "web.toml").string();
        auto from_disk = tree.load();
        auto from_text = load_text(text, TextKind::service, file, test_options());
        CHECK(lines(from_text) == lines(from_disk));
        REQUIRE(from_text.has_value() == from_disk.has_value());
        if (from_text) {
            CHECK(from_text->services == from_disk->services);
            CHECK(from_text->dir == from_disk->dir);
        }
    }
}

TEST_CASE("load_text gives what load_tree gives for a tree of that one pkitd.toml") {
    const std::string texts[] = {
        "shutdown_timeout = \"10s\"\n[root]\nmax_restarts = 2\n",
        "[groups.g]\nmembers = [\"web\"]\nstrategy = \"sideways\"\n",
        "socket = \n",
    };
    for (const std::string& text : texts) {
        CAPTURE(text);
        TempTree tree;
        tree.daemon(text);
        const std::string file = (tree.root() / "pkitd.toml").string();
        auto from_disk = tree.load();
        auto from_text = load_text(text, TextKind::daemon, file, test_options());
        CHECK(lines(from_text) == lines(from_disk));
        REQUIRE(from_text.has_value() == from_disk.has_value());
        if (from_text) {
            CHECK(from_text->daemon == from_disk->daemon);
            CHECK(from_text->dir == from_disk->dir);
        }
    }
}

TEST_CASE("load_text reads no file: the name only labels the diagnostics") {
    auto result = load_text("command = 1\n", TextKind::service, "/nonexistent/services/x.toml",
                            test_options());
    REQUIRE_FALSE(result.has_value());
    REQUIRE(result.error().size() == 1);
    CHECK(result.error()[0].file == "/nonexistent/services/x.toml");
    CHECK(result.error()[0].line == 1);
    CHECK(result.error()[0].column == 11);
}
