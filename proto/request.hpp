#pragma once
// A control request (SPEC §9): `{"id": <any JSON>, "cmd": "<command>", ...arguments}`.
// pkitd parses request lines with parse_request; pkitctl builds them with to_json.

#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/codes.hpp"

namespace pkit::proto {

// One request with every argument any command takes; a command reads only its own.
struct Request {
    json id;  // echoed in every reply line; null when the request had none
    Command cmd = Command::ping;
    std::vector<std::string> services;  // status (optional), start/stop/restart/signal/pause/resume
    bool all = false;                   // start/stop/restart/pause/resume: every service
    std::string signal;                 // signal: a name or number, as the user wrote it
    bool group = false;                 // signal: the whole process group, not the main PID
    std::string service;                // logs, explain, scale
    int lines = 100;                    // logs: the last N lines
    bool previous = false;              // logs: the run before the latest
    bool follow = false;                // logs: stream new lines after the reply
    // logs: only lines read at or after this (unix seconds); before the tail's oldest
    // line, the service's log file is read back too (SPEC §18)
    std::optional<double> since;
    std::string wait_for = "ready";  // wait (`for`): "ready", "done" or "stopped"
    double within = 60.0;            // wait: seconds before not_reached
    // stop/restart: reply at once, before the runs end; reload: without waiting for the
    // start_first replacements it began
    bool no_block = false;
    bool resources = false;  // status: each run's processes, CPU and memory
    // status: only these members (and "name") in each service object; empty: all.
    std::vector<std::string> fields;
    int instances = 0;     // scale: the new number of instances, 1..k_max_scale
    bool rolling = false;  // restart: one service at a time, each ready before the next
    std::string binary;    // upgrade: the new pkitd; empty: the one running

    bool operator==(const Request&) const = default;
};

// The deepest `id` accepted. Echoing an id copies and prints it, and both recurse, so
// a hostile id nested a million levels deep must be refused before it is touched.
inline constexpr int k_max_id_depth = 64;

// How deeply arrays and objects may nest inside a request's object, in any member. A
// deeper line is refused (bad_request) from its text, before nlohmann builds anything:
// its parser does not recurse, but a line of 1 MiB nested half a million deep costs it
// tens of MB and tens of milliseconds of pkitd's loop for nothing.
inline constexpr int k_max_request_depth = 64;

// The most instances `scale` accepts (SPEC §13), as a file's `instances`.
inline constexpr int k_max_scale = 1000;

// Parses one request line (without its newline). Never throws and never aborts,
// whatever the bytes: every problem comes back as an Error whose message names the
// offending field, with `id` filled in when it could be read. Checks each command's
// required arguments (start/stop/restart/signal/pause/resume: a non-empty `services` or
// `all: true`; signal: `signal`; logs/explain: `service`; logs: `lines` >= 0;
// wait: services or all, `for` one of ready/done/stopped, `within` a finite number >= 0;
// status: `fields`, when given, an array of status member names; scale: `service` and
// `instances`, an integer from 1 to k_max_scale).
// A name repeated in `services` is kept once, where it was first mentioned.
// Unknown fields are ignored, as the protocol promises; a line nested more than
// k_max_request_depth deep is refused whatever its fields.
std::expected<Request, Error> parse_request(std::string_view line) noexcept;

// The request as sent on the wire: `id`, `cmd` and only the arguments its command
// uses, so a request round-trips through parse_request unchanged.
void to_json(json& out, const Request& request);

// The request's wire line: compact JSON and "\n".
std::string request_line(const Request& request);

}  // namespace pkit::proto
