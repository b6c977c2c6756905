#pragma once
// pkitctl's colour decision (SPEC §10): `--color auto|always|never`, where auto means
// standard output is a terminal, NO_COLOR is unset (or empty) and TERM is not `dumb`.
// The decision is a pure function of those facts; main records the mode once.

#include <optional>
#include <string_view>

namespace pkit::ctl {

enum class ColorMode { automatic, always, never };

// "auto", "always", "never"; nullopt for anything else.
std::optional<ColorMode> parse_color_mode(std::string_view text);

// Whether to colour: `always` and `never` decide alone; `automatic` colours only on a
// terminal, with `no_color` null or empty and `term` null or other than "dumb".
bool color_wanted(ColorMode mode, bool terminal, const char* no_color, const char* term);

// Records the mode given with --color (automatic until then). Called once, by main.
void set_color_mode(ColorMode mode);

// The decision for standard output under the recorded mode and this environment.
bool use_color();

}  // namespace pkit::ctl
