#pragma once
// A reply holding status rows (status; start, stop, restart, signal, wait), read
// straight into ServiceStatus rows as the line is scanned: no JSON tree, which for a
// thousand services costs more than the rest of `pkitctl status`. Reads
// every member status.cpp writes, so a whole row and a row cut down by "fields" read
// alike; members a row lacks keep their defaults, as from_json leaves them.

#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/status.hpp"

namespace pkit::proto {

// The rows of a reply line {"id", "ok": true, "result": {..., "services": [...]}}.
// nullopt when the line is a reply of another shape that parse_reply reads (an error
// reply, a stream line), so the caller reads it that way. An error message when the
// line is not a JSON object, or its result has no "services" array of status objects
// (each with a string "name" and "state", every known member of its SPEC §5 type).
// Never throws.
std::expected<std::optional<std::vector<ServiceStatus>>, std::string> parse_status_rows(
    std::string_view line) noexcept;

}  // namespace pkit::proto
