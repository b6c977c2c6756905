#pragma once
// Value forms of SPEC §2: durations, signals, sizes; and their display forms.
// Shared by the loader, the daemon's log, the protocol and pkitctl's table.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "config/model.hpp"

namespace pkit::config {

// "250ms", "5s", "1m30s", "2h", "0", "0.5s"; nullopt when malformed or negative.
// Parts go from larger units to smaller (h m s ms), each unit at most once; each
// part is digits with an optional decimal fraction. A bare "5" is refused.
// (Bare numbers of seconds come from TOML as numbers; see duration_from_seconds.)
std::optional<Duration> parse_duration(std::string_view text);
// Seconds as a duration, rounded to the nanosecond; nullopt when negative, not
// finite, or beyond what Duration holds.
std::optional<Duration> duration_from_seconds(double seconds);

// "SIGTERM" or "TERM" (upper case as in signal(7); "term" is refused), "RTMIN+3",
// "RTMAX-1", "SIG40", or a number "1".."64"; nullopt otherwise.
std::optional<int> parse_signal(std::string_view text);
// "SIGKILL"; "SIG<n>" for a number with no name (real-time signals). parse_signal()
// reads every result back.
std::string signal_name(int signo);
// What follows "unknown signal \"X\"" for a text parse_signal() refused: the name in
// upper case when that is one ("; signal names are upper case: \"TERM\""), else the
// closest name when it looks like a typo ("; did you mean \"KILL\"?", written with SIG
// when `text` is), else "".
std::string signal_suggestion(std::string_view text);

// "512B", "256KiB", "1MiB", "2GiB", "1TiB", or digits; nullopt when malformed or
// too large. Decimal "KB"/"MB" and fractions are refused, not guessed.
std::optional<std::uint64_t> parse_size(std::string_view text);
// A size in the largest binary unit that holds it whole: "256MiB", "1536KiB", "1GiB",
// "100B". parse_size() reads every result back.
std::string format_size(std::uint64_t bytes);

// Human durations for tables and logs: "850ms", "12s", "3m12s", "2h5m", "3d4h":
// the two largest units, truncated; "0s" for zero; a "-" before negatives.
std::string format_duration(Duration d);

// Fractional seconds, for JSON and logs.
double to_seconds(Duration d);

}  // namespace pkit::config
