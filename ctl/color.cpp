#include "ctl/color.hpp"

#include <unistd.h>

#include <cstdlib>
#include <string_view>

namespace pkit::ctl {
namespace {

// The --color mode, written once by main before any output: the only process-wide
// option, kept here so the renderers' callers need not pass it along.
ColorMode g_mode = ColorMode::automatic;

}  // namespace

std::optional<ColorMode> parse_color_mode(std::string_view text) {
    if (text == "auto") {
        return ColorMode::automatic;
    }
    if (text == "always") {
        return ColorMode::always;
    }
    if (text == "never") {
        return ColorMode::never;
    }
    return std::nullopt;
}

bool color_wanted(ColorMode mode, bool terminal, const char* no_color, const char* term) {
    switch (mode) {
        case ColorMode::always:
            return true;
        case ColorMode::never:
            return false;
        case ColorMode::automatic:
            break;
    }
    const bool no_color_set = no_color != nullptr && *no_color != '\0';
    const bool dumb = term != nullptr && std::string_view(term) == "dumb";
    return terminal && !no_color_set && !dumb;
}

void set_color_mode(ColorMode mode) {
    g_mode = mode;
}

bool use_color() {
    return color_wanted(g_mode, ::isatty(STDOUT_FILENO) == 1, std::getenv("NO_COLOR"),
                        std::getenv("TERM"));
}

}  // namespace pkit::ctl
