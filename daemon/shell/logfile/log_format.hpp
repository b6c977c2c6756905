#pragma once
// SPEC §18: one output line as a log file holds it, and back. Pure: the writer thread
// formats with it, and the reading back parses with it.
//
//   text  2026-12-04T21:14:43.123Z out TEXT     (RFC 3339 UTC, milliseconds; out|err)
//   json  {"at":"2026-12-04T21:14:43.123Z","service":"web","run":3,"stream":"stdout",
//          "text":"TEXT"}                       (one object a line, keys in this order)
//   raw   TEXT

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "config/model.hpp"
#include "daemon/core/types.hpp"

namespace pkit::shell {

// One line read from a run's pipe, as LogFiles queues it.
struct LogRecord {
    core::Stream stream = core::Stream::stdout_;
    double at = 0.0;        // wall clock, unix seconds, when pkitd read it
    std::uint64_t run = 0;  // the run's number (json only)
    std::string_view text;  // without its '\n'; holds none
};

// `at` (unix seconds) as "YYYY-MM-DDTHH:MM:SS.mmmZ", milliseconds truncated; 24 bytes.
// Times before 1970 or after 9999 are clamped to those years' ends.
void append_rfc3339_ms(std::string& out, double at);
// The unix time of such a text (exactly that form), or nullopt.
std::optional<double> parse_rfc3339_ms(std::string_view text);

// Appends `record` in `format`, and a '\n', to `out`. `service` is the json's "service".
// Text that is not valid UTF-8 is written as it is in text and raw, and with U+FFFD in
// json (as the protocol writes it).
void append_log_line(std::string& out, config::LogFormat format, std::string_view service,
                     const LogRecord& record);

// One line of a log file, read back.
struct ParsedLine {
    core::Stream stream = core::Stream::stdout_;
    double at = 0.0;
    std::string text;
};
// `line` (without its '\n') as written by append_log_line() in `format`; nullopt for a
// line it did not write (a raw file, a line some other program added, a torn line).
std::optional<ParsedLine> parse_log_line(config::LogFormat format, std::string_view line);

}  // namespace pkit::shell
