#pragma once
// Reply and stream lines (SPEC §9). Every request gets exactly one reply line first:
//   {"id": <same>, "ok": true, "result": {...}}
//   {"id": <same>, "ok": false, "error": {"code": "<code>", "message": "<text>"}}
// and a streaming request then gets further lines:
//   {"id": <same>, "event": {...}}   or   {"id": <same>, "line": {...}}
// Each builder returns one compact JSON line ending in "\n". Text that is not valid
// UTF-8 (a service's output may be anything) is replaced with U+FFFD, never thrown on.

#include <expected>
#include <optional>
#include <string>
#include <string_view>

#include "proto/codes.hpp"

namespace pkit::proto {

std::string ok_reply(const json& id, const json& result);
// The same, taking the result over instead of copying it.
std::string ok_reply(const json& id, json&& result);
std::string error_reply(const json& id, ErrorCode code, std::string_view message);
std::string error_reply(const Error& error);
std::string event_line(const json& id, const json& event);
std::string log_line(const json& id, const json& line);

// A stream line in two pieces, so that pkitd builds one event's (or one output line's)
// text once and shares it among every subscriber, each with its own head:
// event_head(id) + stream_body(event) == event_line(id, event), and
// log_head(id) + stream_body(line) == log_line(id, line), byte for byte.
std::string event_head(const json& id);
std::string log_head(const json& id);
std::string stream_body(const json& body);

// Compact JSON and "\n", with invalid UTF-8 replaced rather than thrown on.
std::string to_line(const json& value);

// One line received by a client, sorted by kind.
struct Reply {
    enum class Kind { result, error, event, line };
    json id;
    Kind kind = Kind::result;
    json body;    // the result, event or log line object; null for an error
    Error error;  // for Kind::error; an unknown code reads as bad_request
};

// How deeply arrays and objects may nest inside a reply's object: pkitd's nest a few
// levels, and an echoed id at most k_max_id_depth (request.hpp). A client prints and
// compares what it reads, which recurses, so a deeper line (no pkitd sends one) is
// refused unread.
inline constexpr int k_max_reply_depth = 128;

// Parses a line from pkitd. Never throws; a line that is none of the four shapes, or
// nested more than k_max_reply_depth deep, comes back as a message saying what is
// wrong with it.
std::expected<Reply, std::string> parse_reply(std::string_view line) noexcept;

// The text of a successful reply's result as the line has it (the value of "result",
// without the whitespace around it), when `line` is one valid JSON object whose "ok" is
// true (a key given twice counts as its last one, as parse_reply reads it); nullopt for
// anything else (an error reply, a line that is not JSON). For a client that passes a
// large result on as it came, with no tree of it built only to be written again:
// pkitd writes what to_line() would write (proto/json_writer.hpp).
std::optional<std::string_view> result_text(std::string_view line);

}  // namespace pkit::proto
