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
// (Bare numbers of seconds come from TOML as numbers; see duration_from_seconds.)
std::optional<Duration> parse_duration(std::string_view text);
std::optional<Duration> duration_from_seconds(double seconds);

// "SIGTERM", "TERM", "term"? no: names are upper case as in signal(7); or "15".
std::optional<int> parse_signal(std::string_view text);
// "SIGKILL"; "SIG<n>" for a number with no name.
std::string signal_name(int signo);

// "512B", "256KiB", "1MiB", "2GiB", or digits; nullopt when malformed.
std::optional<std::uint64_t> parse_size(std::string_view text);

// Human durations for tables and logs: "850ms", "12s", "3m12s", "2h5m", "3d4h".
std::string format_duration(Duration d);

double to_seconds(Duration d);

}  // namespace pkit::config
