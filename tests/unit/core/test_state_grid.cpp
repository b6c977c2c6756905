// The grids of daemon/core/service_table.hpp, cell by cell. The test enumerates the
// phases and inputs the table names, reads the grids from the header itself, brings a
// Service to each column, feeds it each input (a row) and checks the cell: the column it
// is left in; for "-", that nothing changed at all (no action, and every query answers
// as before); for "·", that the column stayed. An input for a run other than the
// current one is "-" in every column of every grid. It reads service.hpp too: each
// public member function that changes a Service is some input's, and each query is
// asked by observe(). So the comment cannot drift from the code, and nothing can be
// added to the code that the grids leave out. The columns' words: grid_cells.hpp.

#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "daemon/core/service.hpp"
#include "tests/unit/core/grid_cells.hpp"
#include "tests/unit/core/grid_observe.hpp"
#include "tests/unit/core/grid_reader.hpp"

namespace pkit::core {
namespace {

using namespace test;
using namespace test::grid;

std::string source(const char* path) {
    std::ifstream in(std::string(PKIT_SOURCE_DIR) + "/" + path);
    REQUIRE_MESSAGE(in, "cannot read " << path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

const std::vector<Grid>& grids() {
    static const std::vector<Grid> all = read_grids(source("daemon/core/service_table.hpp"));
    return all;
}

// The words of `a` that `b` lacks (as many times as it lacks them), for a message.
std::string lacking(const std::vector<std::string>& a, const std::vector<std::string>& b) {
    std::multiset<std::string> left(b.begin(), b.end());
    std::string found;
    for (const std::string& word : a) {
        auto it = left.find(word);
        if (it == left.end()) {
            found += (found.empty() ? "" : " ") + word;
        } else {
            left.erase(it);
        }
    }
    return found;
}

// --- The tests -----------------------------------------------------------------------

TEST_CASE("state grid: the table names every phase, every input and every member") {
    const std::vector<Grid>& all = grids();
    REQUIRE(all.size() == 3);
    const Grid& plain = all.front();
    REQUIRE(plain.name == "phase");

    // The plain grid has a column for each word of each phase, and no other; every
    // other grid's columns are phases' words with a suffix.
    std::vector<std::string> words;
    for (Phase phase : all_phases()) {
        for (const std::string& word : words_in(words_of(phase).columns)) {
            words.push_back(word);
        }
    }
    CHECK_MESSAGE(lacking(words, plain.columns) == "", "phases' words with no column");
    CHECK_MESSAGE(lacking(plain.columns, words) == "", "columns that are no phase's word");
    for (const Grid& grid : all) {
        for (const std::string& column : grid.columns) {
            CAPTURE(grid.name);
            CAPTURE(column);
            CHECK(parse_word(column).has_value());
        }
    }

    // Each grid has a row for each input, once, and none of its own; every row as wide
    // as the header.
    std::vector<std::string> names;
    for (Input input : all_inputs()) {
        names.emplace_back(words_of(input).name);
    }
    for (const Grid& grid : all) {
        CAPTURE(grid.name);
        std::vector<std::string> rows;
        for (const auto& [input, cells] : grid.rows) {
            CAPTURE(input);
            CHECK(cells.size() == grid.columns.size());
            rows.push_back(input);
        }
        CHECK_MESSAGE(lacking(names, rows) == "", "inputs with no row");
        CHECK_MESSAGE(lacking(rows, names) == "", "rows that are no input, or twice");
    }

    // Each public member function of Service that changes it is some input's, and the
    // inputs call nothing else; each const one is a query that observe() asks.
    const std::vector<Member> members =
        public_members(source("daemon/core/service.hpp"), "Service");
    REQUIRE_FALSE(members.empty());
    std::vector<std::string> mutators;
    std::vector<std::string> queries;
    for (const Member& member : members) {
        (member.is_const ? queries : mutators).push_back(member.name);
    }
    std::vector<std::string> called;
    for (Input input : all_inputs()) {
        const std::string member(words_of(input).member);
        if (std::find(called.begin(), called.end(), member) == called.end()) {
            called.push_back(member);
        }
    }
    CHECK_MESSAGE(lacking(mutators, called) == "", "members that change a Service, no input's");
    CHECK_MESSAGE(lacking(called, mutators) == "", "inputs' members that are not public ones");
    std::vector<std::string> asked;
    Driver d = brought("phase", "run");
    for (const auto& [query, answer] : observe(d.svc).answers) {
        asked.push_back(query);
    }
    CHECK_MESSAGE(lacking(queries, asked) == "", "queries observe() does not ask");
    CHECK_MESSAGE(lacking(asked, queries) == "", "observe()'s answers that are no query");
}

TEST_CASE("state grid: every cell, driven") {
    for (const Grid& grid : grids()) {
        for (const auto& [row, cells] : grid.rows) {
            const std::optional<Input> input = input_named(row);
            REQUIRE_MESSAGE(input, "not an input: " << row);
            REQUIRE(cells.size() == grid.columns.size());
            for (std::size_t k = 0; k < cells.size(); ++k) {
                const std::string& column = grid.columns[k];
                const std::string& cell = cells[k];
                CAPTURE(grid.name);
                CAPTURE(row);
                CAPTURE(column);
                CAPTURE(cell);
                Driver d = brought(grid.name, column);
                REQUIRE(shows(d.svc, column));
                const Seen before = observe(d.svc);
                feed(d, *input, d.svc.run());
                if (cell == "-") {
                    CHECK(d.take() == "");
                    CHECK(differences(before, observe(d.svc)) == "");
                } else if (cell == "·") {
                    CHECK(shows(d.svc, column));
                } else {
                    CHECK(shows(d.svc, cell));
                }
            }
        }
    }
}

TEST_CASE("state grid: an input for another run changes nothing, in every column") {
    for (const Grid& grid : grids()) {
        for (const std::string& column : grid.columns) {
            for (Input input : all_inputs()) {
                if (!words_of(input).names_run) {
                    continue;
                }
                CAPTURE(grid.name);
                CAPTURE(column);
                CAPTURE(words_of(input).name);
                Driver d = brought(grid.name, column);
                const Seen before = observe(d.svc);
                feed(d, input, d.svc.run() + 7);
                CHECK(d.take() == "");
                CHECK(differences(before, observe(d.svc)) == "");
            }
        }
    }
}

}  // namespace
}  // namespace pkit::core
