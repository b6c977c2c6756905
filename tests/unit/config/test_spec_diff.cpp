// spec_diff() (SPEC §21, reload --dry-run): the keys two definitions differ in, named as
// the file names them, with short values; its table of keys holds every key the
// loader reads.

#include <set>

#include "config/spec_diff.hpp"
#include "tests/unit/config/config_doctest.hpp"
#include "tests/unit/config/temp_tree.hpp"

using namespace pkit::config;
using namespace pkit::config::test;

namespace {

// Every table of a service file and its keys, from the loader itself (as the man page
// test finds them): a header for each key seen, until a round finds nothing new.
TableKeys loader_keys() {
    TableKeys tables;
    std::set<std::string> written;
    std::string text;
    for (int round = 0; round < 16; ++round) {
        (void)load_text(text, TextKind::service, "/dir/services/x.toml",
                        LoadOptions{.as_root = true}, tables);
        bool grew = false;
        for (const auto& [path, keys] : tables) {
            for (const auto& key : keys) {
                std::string header = path.empty() ? key : path + "." + key;
                if (written.insert(header).second) {
                    text += "[" + header + "]\n";
                    grew = true;
                }
            }
        }
        if (!grew) {
            break;
        }
    }
    return tables;
}

std::vector<KeyChange> diff(const std::string& before, const std::string& after) {
    return spec_diff(service_spec("command = [\"/bin/app\"]\n" + before),
                     service_spec("command = [\"/bin/app\"]\n" + after));
}

}  // namespace

TEST_CASE("spec_diff's table names every key the loader reads in a service file") {
    std::set<std::pair<std::string, std::string>> known;
    for (auto& key : spec_diff_keys()) {
        known.insert(key);
    }
    const TableKeys tables = loader_keys();
    REQUIRE(tables.size() > 10);
    for (const auto& [table, keys] : tables) {
        // Free tables: env's variables and rlimits' names are keys of their own
        // ("env.PORT", "rlimits.nofile"); [[listen]] is one key, its entries' whole list.
        if (table == "env" || table == "rlimits" || table == "listen") {
            continue;
        }
        for (const std::string& key : keys) {
            // `instances` changes which services there are, not a definition; a section
            // ([restart], ...) is checked by its own keys.
            if (table.empty() && (key == "instances" || tables.contains(key))) {
                continue;
            }
            CAPTURE(table);
            CAPTURE(key);
            CHECK(known.contains({table, key}));
        }
    }
}

TEST_CASE("the same definition differs in nothing") {
    CHECK(diff("[restart]\norder = \"start_first\"\n", "[restart]\norder = \"start_first\"\n")
              .empty());
    // Defaults written out are no difference either.
    CHECK(diff("", "[stop]\ntimeout = \"5s\"\n").empty());
}

TEST_CASE("each differing key, with its old and new value as a file writes it") {
    auto changes =
        diff("timeout = \"90s\"\n[ready]\nhttp = \"http://127.0.0.1:8000/\"\n",
             "timeout = \"1m30s500ms\"\nenv = { PORT = \"8001\" }\n[ready]\nnotify = true\n");
    CHECK(changes == std::vector<KeyChange>{
                         {"env.PORT", std::nullopt, "\"8001\""},
                         {"timeout", "\"1m30s\"", "\"1m30s500ms\""},
                         {"ready.notify", "false", "true"},
                         {"ready.http", "\"http://127.0.0.1:8000/\"", std::nullopt},
                     });
}

TEST_CASE("sections and their values") {
    CHECK(diff("[restart]\norder = \"stop_first\"\n", "[restart]\norder = \"start_first\"\n") ==
          std::vector<KeyChange>{{"restart.order", "\"stop_first\"", "\"start_first\""}});
    CHECK(diff("[stop]\nsignal = \"SIGTERM\"\n", "[stop]\nsignal = \"SIGINT\"\n") ==
          std::vector<KeyChange>{{"stop.signal", "\"SIGTERM\"", "\"SIGINT\""}});
    CHECK(diff("", "[give_up_when]\nexit_codes = [78, 2]\nlaunch_errors = [\"not_found\"]\n") ==
          std::vector<KeyChange>{{"give_up_when.exit_codes", "[]", "[78, 2]"},
                                 {"give_up_when.launch_errors", "[]", "[\"not_found\"]"}});
    CHECK(diff("[resources]\nmemory_max = \"512MiB\"\n", "") ==
          std::vector<KeyChange>{{"resources.memory_max", "\"512MiB\"", std::nullopt}});
    CHECK(
        diff("[[listen]]\ntcp = \"127.0.0.1:8000\"\n", "[[listen]]\ntcp = \"127.0.0.1:8001\"\n") ==
        std::vector<KeyChange>{
            {"listen", "[{tcp = \"127.0.0.1:8000\"}]", "[{tcp = \"127.0.0.1:8001\"}]"}});
    CHECK(diff("type = \"oneshot\"\nschedule = \"0 3 * * *\"\n",
               "type = \"oneshot\"\nschedule = \"15 3 * * *\"\n") ==
          std::vector<KeyChange>{{"schedule", "\"0 3 * * *\"", "\"15 3 * * *\""}});
    CHECK(diff("rlimits = { nofile = 1024 }\n", "rlimits = { nofile = \"unlimited\" }\n") ==
          std::vector<KeyChange>{{"rlimits.nofile", "1024", "\"unlimited\""}});
}

TEST_CASE("a long value is cut short, never inside a character") {
    std::string word(100, 'x');
    auto changes = diff("", "env = { LONG = \"\xc3\xa9" + word + "\" }\n");
    REQUIRE(changes.size() == 1);
    REQUIRE(changes[0].new_value);
    const std::string& shown = *changes[0].new_value;
    CHECK(shown.size() <= k_max_value_text);
    CHECK(shown.ends_with("..."));
    CHECK(shown.starts_with("\"\xc3\xa9xxx"));
    // Quotes and control characters are escaped.
    auto escaped = diff("", "env = { Q = \"a\\\"b\\n\" }\n");
    REQUIRE(escaped.size() == 1);
    CHECK(escaped[0].new_value == "\"a\\\"b\\u000a\"");
}

TEST_CASE("a group's change: another group, or its own keys") {
    GroupSpec web{.name = "web", .members = {"a", "b"}};
    GroupSpec web_all = web;
    web_all.strategy = Strategy::one_for_all;
    GroupSpec other{.name = "other"};
    CHECK(group_diff(nullptr, nullptr).empty());
    CHECK(group_diff(&web, &web).empty());
    CHECK(group_diff(&web, &web_all) ==
          std::vector<KeyChange>{{"groups.web.strategy", "\"one_for_one\"", "\"one_for_all\""}});
    CHECK(group_diff(&web, &other) == std::vector<KeyChange>{{"group", "\"web\"", "\"other\""}});
    CHECK(group_diff(nullptr, &web) == std::vector<KeyChange>{{"group", std::nullopt, "\"web\""}});
}
