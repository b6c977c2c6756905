// read_status_args: the `pkitctl status` command lines main runs without CLI11, and
// the ones it leaves to CLI11 because CLI11 might read them otherwise (or refuse them).

#include <doctest/doctest.h>

#include "ctl/status_args.hpp"

using namespace pkit::ctl;
using Words = std::vector<std::string>;

TEST_CASE("status args: the common status lines are read as CLI11 reads them") {
    auto plain = read_status_args({"status"});
    REQUIRE(plain);
    CHECK(plain->global.socket.empty());
    CHECK_FALSE(plain->global.json);
    CHECK(plain->global.timeout == 10.0);
    CHECK_FALSE(plain->global.timeout_given);
    CHECK(plain->global.color == "auto");
    CHECK(plain->options.names.empty());
    CHECK_FALSE(plain->options.tree);
    CHECK_FALSE(plain->options.resources);

    auto full = read_status_args(
        {"--socket", "/run/s.sock", "status", "--tree", "--json", "--resources", "web", "db"});
    REQUIRE(full);
    CHECK(full->global.socket == "/run/s.sock");
    CHECK(full->global.json);
    CHECK(full->options.tree);
    CHECK(full->options.resources);
    CHECK(full->options.names == Words{"web", "db"});

    auto joined = read_status_args({"--json", "status", "--socket=/tmp/x", "web"});
    REQUIRE(joined);
    CHECK(joined->global.socket == "/tmp/x");
    CHECK(joined->global.json);
    CHECK(joined->options.names == Words{"web"});
}

TEST_CASE("status args: every other line is left to CLI11") {
    const std::vector<Words> others{
        {},
        {"--json"},
        {"stat"},
        {"start", "web"},
        {"web", "status"},
        {"--tree", "status"},  // a status option before the command
        {"status", "--help"},
        {"status", "-h"},
        {"--version", "status"},
        {"--timeout", "5", "status"},  // validated by CLI11
        {"--color", "never", "status"},
        {"status", "web", "--json"},  // an option after a name
        {"status", "--json", "--json"},
        {"status", "--tree", "--tree"},
        {"--socket", "/a", "--socket", "/b", "status"},
        {"--socket", "status"},  // CLI11 takes "status" for the command
        {"--socket", "-x", "status"},
        {"--socket=", "status"},
        {"status", "--socket"},
        {"status", "status"},
        {"status", "--"},
        {"status", "-r"},
        {"status", ""},
        {"status", "--resources=1"},
    };
    for (const auto& words : others) {
        CAPTURE(words.size());
        CHECK_FALSE(read_status_args(words).has_value());
    }
}
