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

// A DURATION of the command line (`wait --within`, `logs --since`, `--timeout`,
// `top --interval`) in seconds: a duration of pkit.toml(5) ("2s", "1m30s", "500ms")
// or a bare number of seconds ("2", "0.5"); nullopt when malformed, negative or
// beyond 1e9 seconds. Every option that takes a DURATION reads it with this.
std::optional<double> parse_duration_arg(std::string_view text);

// parse_duration_arg() for `option`, or a usage error (exit 2) that says what a
// duration looks like: `--within: "abc" is not a duration (such as 5, 30s, 1m30s,
// 250ms)`. With `positive`, zero is refused too.
double duration_option(std::string_view option, std::string_view text, bool positive = false);

// The wall clock now, in unix seconds (what `at` counts).
double unix_now();

}  // namespace pkit::ctl
