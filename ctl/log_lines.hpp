#pragma once
// The lines `pkitctl logs` prints: which lines of a tail to keep (--stream, --since,
// -n), several services' tails interleaved by time, and each line as text with its
// `NAME | ` prefix and -t timestamp. Pure functions of the protocol's line objects
// ({"stream", "text", "at"}, SPEC §9).

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "proto/protocol.hpp"

namespace pkit::ctl {

// Which lines of a tail to keep.
struct LineSelection {
    std::string stream;           // "stdout" or "stderr"; empty: both
    std::optional<double> since;  // keep lines whose `at` is at or after this (unix s)
    std::optional<int> last;      // then keep only the last this many
};

// The lines of `lines` (a JSON array, oldest first) that `selection` keeps, in order.
proto::json select_lines(const proto::json& lines, const LineSelection& selection);

// How to print a line.
struct LineFormat {
    bool timestamps = false;     // -t: the line's `at` as a local clock time before its text
    std::size_t name_width = 0;  // with several services: the names' column width
    bool prefixed = false;       // several services: "NAME | " first
};

// One line of text, no newline: "[NAME | ][12:03:04.512 ]TEXT".
std::string line_text(const std::string& service, const proto::json& line,
                      const LineFormat& format);

// A line of one service.
struct ServiceLine {
    std::string service;
    proto::json line;
};

// The tails of several services (each oldest first) as one list ordered by `at`; lines
// with the same `at` keep the order of `tails`, and a service's own order is kept.
std::vector<ServiceLine> interleave(const std::vector<std::string>& services,
                                    const std::vector<proto::json>& tails);

}  // namespace pkit::ctl
