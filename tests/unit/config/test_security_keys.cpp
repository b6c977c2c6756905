// [security] (SPEC §19) and [health] memory_max / memory_interval (SPEC §20): what a
// valid section gives, and one exact diagnostic for each bad value.

#include "config/capabilities.hpp"
#include "tests/unit/config/config_doctest.hpp"
#include "tests/unit/config/temp_tree.hpp"

using namespace pkit::config;
using namespace pkit::config::test;

TEST_CASE("[security]: every key read") {
    ServiceSpec spec = service_spec(
        "command = [\"x\"]\n"
        "[security]\n"
        "no_new_privileges = true\n"
        "capabilities = [\"CAP_NET_BIND_SERVICE\", \"chown\", \"Cap_Kill\"]\n"
        "private_tmp = true\n"
        "protect_system = \"strict\"\n"
        "writable_paths = [\"/var/lib//app/\", \"/srv\"]\n"
        "read_only_paths = [\"/home\"]\n"
        "inaccessible_paths = [\"/root\"]\n"
        "private_network = true\n");
    const SecuritySpec& s = *spec.security;
    CHECK(s.no_new_privileges);
    REQUIRE(s.capabilities);
    CHECK(*s.capabilities == ((1ULL << 10) | (1ULL << 0) | (1ULL << 5)));
    CHECK(s.private_tmp);
    CHECK(s.protect_system == ProtectSystem::strict);
    CHECK(s.writable_paths == std::vector<std::string>{"/var/lib/app", "/srv"});
    CHECK(s.read_only_paths == std::vector<std::string>{"/home"});
    CHECK(s.inaccessible_paths == std::vector<std::string>{"/root"});
    CHECK(s.private_network);
    CHECK(s.mounts());
    REQUIRE(s.at.size() == 8);
    CHECK(s.at[0].key == "no_new_privileges");
    CHECK(s.at[0].line == 3);
    CHECK(s.at[0].column == 1);
}

TEST_CASE("[security]: absent, or written with its defaults, costs nothing") {
    CHECK_FALSE(service_spec("command = [\"x\"]\n").security.allocated());
    ServiceSpec spec = service_spec("command = [\"x\"]\n[security]\nprivate_tmp = false\n");
    CHECK_FALSE(spec.security.allocated());
    CHECK_FALSE(spec.security->any());
    // An empty list is a key set: every capability dropped.
    ServiceSpec none = service_spec("command = [\"x\"]\n[security]\ncapabilities = []\n");
    REQUIRE(none.security->capabilities);
    CHECK(*none.security->capabilities == 0);
    CHECK(none.security->any());
    CHECK_FALSE(none.security->mounts());
}

TEST_CASE("capability names") {
    CHECK(capability_number("CAP_NET_BIND_SERVICE") == 10);
    CHECK(capability_number("net_bind_service") == 10);
    CHECK(capability_number("cap_sys_admin") == 21);
    CHECK(capability_number("CAP_CHECKPOINT_RESTORE") == 40);
    CHECK_FALSE(capability_number("CAP_").has_value());
    CHECK_FALSE(capability_number("CAP_NET_BIND").has_value());
    CHECK(capability_name(10) == "CAP_NET_BIND_SERVICE");
    CHECK(capability_names((1ULL << 10) | 1ULL) ==
          std::vector<std::string>{"CAP_CHOWN", "CAP_NET_BIND_SERVICE"});
}

TEST_CASE("bad [security] values") {
    const BadCase cases[] = {
        {"[security]\ncapabilities = [\"CAP_NET_BIND_SERVIC\"]",
         "3:17: error: security.capabilities: unknown capability \"CAP_NET_BIND_SERVIC\"; did you "
         "mean \"CAP_NET_BIND_SERVICE\"?"},
        {"[security]\ncapabilities = [\"CAP_NET_BIND\"]",
         "3:17: error: security.capabilities: unknown capability \"CAP_NET_BIND\""},
        {"[security]\ncapabilities = [\"net_bind_service\", \"sys_admn\"]",
         "3:37: error: security.capabilities: unknown capability \"sys_admn\"; did you mean "
         "\"CAP_SYS_ADMIN\"?"},
        {"[security]\ncapabilities = \"CAP_KILL\"",
         "3:16: error: security.capabilities: expected an array, got a string"},
        {"[security]\nprotect_system = \"yes\"",
         "3:18: error: security.protect_system: unknown value \"yes\" (expected \"full\" or "
         "\"strict\")"},
        {"[security]\nprotect_system = true",
         "3:18: error: security.protect_system: expected a string, got a boolean"},
        {"[security]\nwritable_paths = [\"data\"]",
         "3:19: error: security.writable_paths: \"data\" is not an absolute path"},
        {"[security]\nread_only_paths = [\"/srv/../etc\"]",
         "3:20: error: security.read_only_paths: \"/srv/../etc\" has a \".\" or \"..\" "
         "component; write the path itself"},
        {"[security]\ninaccessible_paths = \"/root\"",
         "3:22: error: security.inaccessible_paths: expected an array, got a string"},
        {"[security]\nprivate_network = 1",
         "3:19: error: security.private_network: expected true or false, got an integer"},
        {"[security]\nprivate_temp = true",
         "3:1: error: unknown key \"private_temp\" in [security]; did you mean \"private_tmp\"?"},
        {"[give_up_when]\nlaunch_errors = [\"sandboxed\"]",
         "3:18: error: give_up_when.launch_errors: unknown value \"sandboxed\"; did you mean "
         "\"sandbox\"?"},
    };
    for (const BadCase& c : cases) {
        check_bad(c);
    }
}

TEST_CASE("[health] memory_max and memory_interval") {
    ServiceSpec spec = service_spec(
        "command = [\"x\"]\n[health]\nmemory_max = \"200MiB\"\nmemory_interval = \"1s\"\n"
        "[give_up_when]\nmemory = true\nlaunch_errors = [\"sandbox\"]\n[stop_when]\nmemory = "
        "true\n");
    CHECK(spec.health->memory_max == 200ULL * 1024 * 1024);
    CHECK(spec.health->memory_interval == 1s);
    CHECK_FALSE(spec.health->enabled());  // no probe
    CHECK(spec.give_up_when->memory);
    CHECK(spec.stop_when->memory);
    CHECK(spec.give_up_when->launch_errors == std::vector<LaunchError>{LaunchError::sandbox});
    CHECK(service_spec("command = [\"x\"]\n[health]\nmemory_max = \"1GiB\"\n")
              .health->memory_interval == 5s);

    const BadCase cases[] = {
        {"[health]\nmemory_max = \"100KiB\"",
         "3:14: error: health.memory_max: must be at least 1MiB"},
        {"[health]\nmemory_max = \"1GiB\"\nmemory_interval = \"10ms\"",
         "4:19: error: health.memory_interval: at least 100ms, got 10ms"},
        {"[health]\nmemory_interval = \"1s\"",
         "3:1: error: health.memory_interval: has no effect without memory_max"},
        {"[stop_when]\nmemory = \"yes\"",
         "3:10: error: stop_when.memory: expected true or false, got a string"},
    };
    for (const BadCase& c : cases) {
        check_bad(c);
    }
}
