#pragma once
// Times as pkitctl shows and reads them: a moment as a local clock time, a span in
// seconds as short words, and the DURATION of `logs --since`. Pure functions.

#include <optional>
#include <string>
#include <string_view>

namespace pkit::ctl {

// "12:03:04.512": unix seconds `at` in the local time zone, to the millisecond.
std::string clock_text(double at);

// "2026-12-03 02:30:00 CET": unix seconds `at` as a local date and time, to the second.
std::string date_time_text(double at);

// "0.25s", "3.0s", "1m30s": seconds as events and `show` print them (two decimals
// under a second, one under a minute, then the two largest units).
std::string seconds_words(double seconds);

// `--since` DURATION in seconds: a duration of pkit.toml(5) ("2s", "1m30s", "500ms")
// or a bare number of seconds ("2", "0.5"); nullopt when malformed or negative.
std::optional<double> parse_since(std::string_view text);

// The wall clock now, in unix seconds (what `at` counts).
double unix_now();

}  // namespace pkit::ctl
