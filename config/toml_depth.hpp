#pragma once
// Internal to pkitconfig (loader.cpp, tested directly): how deeply a TOML text nests,
// found before toml++ reads it. toml++ recurses once a level while it parses arrays
// and inline tables (it stops itself at 256), and its tables free their children
// recursively: a dotted key of 100,000 parts, "a.a.a...a = 1", is a 200 KB file that
// overflows an 8 MiB stack. So a text nested deeper than k_max_toml_depth is refused
// here, in one pass over its bytes, and toml++ never sees it.
//
// A level is one step of the path from the top of the file to a value: each part of a
// table header's name or of a key's dotted name, and each array around the value.
// `[[name]]` counts its array as well. So `a.b = [[1]]` puts the 1 four deep, and
// `[x]` then `y = {z = 1}` puts the 1 three deep. Strings and comments are skipped as
// TOML reads them; a text that is not TOML is counted as far as it looks like TOML
// (toml++ then reports what is wrong with it).

#include <optional>
#include <string_view>

namespace pkit::config::detail {

inline constexpr int k_max_toml_depth = 32;

// Where a text first goes past k_max_toml_depth: the key part, `[` of an array or part of
// a header that does. Lines and columns count from 1, columns in characters (UTF-8 code
// points), as toml++ counts them.
struct TomlTooDeep {
    int line = 1;
    int column = 1;
};

// The first place `text` is nested more than k_max_toml_depth deep, or nullopt. Linear in
// the text's size; reads nothing past the place it reports.
std::optional<TomlTooDeep> toml_too_deep(std::string_view text);

}  // namespace pkit::config::detail
