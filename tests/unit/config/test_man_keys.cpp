// pkit.toml(5) names every key the loader accepts. The list comes from the loader
// itself (load_text() noting each table it reads and the keys it knows there), never
// from a list kept by hand: a key added to the loader without a line in the page
// fails here.

#include <doctest/doctest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "config/loader.hpp"

using namespace pkit::config;

namespace {

// Every table the loader can read in a file of `kind`, with its keys. Each round
// writes a table header for every key seen so far (a key that takes no table is then
// an error, which does not matter here: the keys are noted before values are read),
// and a free table (one without a key list, like [groups]) gets a member named NAME,
// as the page writes it; until a round finds nothing new.
TableKeys every_table(TextKind kind) {
    const std::string file = kind == TextKind::daemon ? "/dir/pkitd.toml" : "/dir/services/x.toml";
    TableKeys tables;
    std::set<std::string> written;
    std::string text;
    for (int round = 0; round < 16; ++round) {
        (void)load_text(text, kind, file, LoadOptions{.as_root = true}, tables);
        bool grew = false;
        auto write = [&](const std::string& path) {
            if (written.insert(path).second) {
                text += "[" + path + "]\n";
                grew = true;
            }
        };
        for (const auto& [path, keys] : tables) {
            if (keys.empty() && !path.empty()) {
                write(path + ".NAME");
            }
            for (const auto& key : keys) {
                write(path.empty() ? key : path + "." + key);
            }
        }
        if (!grew) {
            break;
        }
    }
    return tables;
}

// The page's lines, split at `.SH PKITD.TOML`: service files before, pkitd.toml after.
struct Page {
    std::vector<std::string> service;
    std::vector<std::string> daemon;
};

Page read_page() {
    std::ifstream in(PKIT_SOURCE_DIR "/man/pkit.toml.5");
    REQUIRE(in);
    Page page;
    bool daemon = false;
    for (std::string line; std::getline(in, line);) {
        if (line.starts_with(".SH ")) {
            daemon = line == ".SH PKITD.TOML";
        }
        (daemon ? page.daemon : page.service).push_back(line);
    }
    return page;
}

bool is_header(const std::string& line) {
    return line.starts_with(".SH ") || line.starts_with(".SS ");
}

// The lines under the header that names table `path` (its section, up to the next
// header); the top level's section for "".
std::vector<std::string> section(const std::vector<std::string>& lines, const std::string& path,
                                 bool daemon) {
    std::vector<std::string> out;
    bool inside = false;
    for (const auto& line : lines) {
        if (is_header(line)) {
            if (path.empty()) {
                inside = daemon ? line == ".SH PKITD.TOML" : line == ".SH SERVICE FILES: TOP LEVEL";
            } else {
                inside = line.find("[" + path + "]") != std::string::npos;
            }
            continue;
        }
        if (inside) {
            out.push_back(line);
        }
    }
    return out;
}

// `.BR key " (...)"` or `.B key`: the key as the page introduces it.
bool introduces(const std::vector<std::string>& lines, const std::string& key) {
    const std::regex entry("^\\.BR? " + key + "( |$)");
    for (const auto& line : lines) {
        if (std::regex_search(line, entry)) {
            return true;
        }
    }
    return false;
}

// A header for table `path` or for its members (`[groups.NAME]` for "groups").
bool has_header(const std::vector<std::string>& lines, const std::string& path) {
    for (const auto& line : lines) {
        if (is_header(line) && (line.find("[" + path + "]") != std::string::npos ||
                                line.find("[" + path + ".") != std::string::npos)) {
            return true;
        }
    }
    return false;
}

void check_documented(TextKind kind) {
    const bool daemon = kind == TextKind::daemon;
    const std::string file = daemon ? "pkitd.toml" : "a service file";
    const Page page = read_page();
    const auto& lines = daemon ? page.daemon : page.service;
    const TableKeys tables = every_table(kind);
    REQUIRE(tables.contains(""));
    CHECK(tables.at("").size() >= (daemon ? 5u : 10u));  // the noting works at all
    for (const auto& [path, keys] : tables) {
        if (!path.empty()) {
            CHECK_MESSAGE((has_header(lines, path) || introduces(section(lines, "", daemon), path)),
                          file, ": [", path, "] has no section in pkit.toml(5)");
        }
        // A table without a header of its own ([rlimits], [env]) is introduced among
        // the top level's keys, with its keys.
        const auto in_section =
            section(lines, has_header(lines, path) ? path : std::string(), daemon);
        for (const auto& key : keys) {
            const std::string full = path.empty() ? key : path + "." + key;
            const bool as_table = tables.contains(full) && has_header(lines, full);
            CHECK_MESSAGE((as_table || introduces(in_section, key)), file, ": key \"", full,
                          "\" is accepted by the loader but not introduced in pkit.toml(5)");
        }
    }
}

}  // namespace

TEST_CASE("pkit.toml(5) introduces every key the loader accepts in a service file") {
    check_documented(TextKind::service);
}

TEST_CASE("pkit.toml(5) introduces every key the loader accepts in pkitd.toml") {
    check_documented(TextKind::daemon);
}
