#pragma once
// "Did you mean" suggestions for unknown keys, values and names. Internal to
// pkitconfig, pure, and tested directly.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pkit::config::detail {

// The optimal-string-alignment distance (Levenshtein plus swaps of two neighbours),
// so "max_backof", "polcy" and "plociy" are all one or two edits away.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `word`, when it is close enough to be a likely typo: at
// most 2 edits, and at most a third of the candidate's length (at least 1), so a
// two-letter key does not "suggest" every other two-letter key. Ties go to the
// earlier candidate.
std::optional<std::string> closest(std::string_view word,
                                   std::span<const std::string_view> candidates);
std::optional<std::string> closest(std::string_view word,
                                   const std::vector<std::string>& candidates);

}  // namespace pkit::config::detail
