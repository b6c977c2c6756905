#pragma once
// "Did you mean" suggestions for unknown keys, values and names: the loader's, and
// the service names pkitd and pkitctl do not know. Pure, and tested directly.

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

// "; did you mean \"web\"?" when closest() finds a candidate for `word`, else "": the
// tail of every "unknown X" message (keys in the loader, service names in pkitd and
// pkitctl), so they all suggest alike.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace pkit::config::detail
