#pragma once
// The state grid's columns and rows as code (test_state_grid.cpp): the phases and inputs
// the table names, a column's word read as a phase with a suffix, a Service brought to
// a column of a grid, and an input fed to it.
//
// A column's word is a phase's word (words_of(Phase)), with a suffix for what else the
// column holds: "/r" a run a start_first restart replaced drains, waiting for the new
// run to be ready (Service::replacing()); "/e" the replaced run drains, ending (its stop
// signal sent); "/a" a scheduled job armed for a tick; "/n" armed, with no tick to come.
// No suffix: none of these.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/service.hpp"
#include "tests/unit/core/fake.hpp"

namespace pkit::core::test::grid {

// Every phase and every input the table names, in order: words_of() is empty past the
// last, so they are counted without a number.
std::vector<Phase> all_phases();
std::vector<Input> all_inputs();
std::optional<Input> input_named(std::string_view name);

// The words of `text`, split at spaces.
std::vector<std::string> words_in(std::string_view text);

// A column's word as its phase (and which of the phase's words), and its suffix.
struct Word {
    Phase phase{};
    std::size_t which = 0;  // starting: 0 lnch, 1 strt
    std::string suffix;
};
std::optional<Word> parse_word(const std::string& word);

// Whether the Service is in the column `word` names, as its public queries show it.
bool shows(const Service& s, const std::string& word);

// A Service brought to `column` of the grid `grid` ("phase", "start_first" or
// "schedule"), its actions so far dropped. Every column is reached before 2s.
Driver brought(const std::string& grid, const std::string& column);

// Feeds `input` at 2s (a deadline or a tick: when it is due, if later), for `run` when
// the input names one.
void feed(Driver& d, Input input, std::uint64_t run);

}  // namespace pkit::core::test::grid
