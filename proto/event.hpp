#pragma once
// The event object of SPEC §9, typed like the status objects beside it: pkitd fills one
// from the core's Event and writes it with to_json; the `events` stream and a `logs
// --follow` stream carry it as {"event": ...}. Every event has type, service, group and
// at; the other fields belong to some types only and are written only when set.

#include <cstdint>
#include <optional>
#include <string>

#include "proto/codes.hpp"
#include "proto/status.hpp"

namespace pkit::proto {

// What an `exited` event adds: how the run ended, or why it never started.
struct ExitedFields {
    // code, signal, duration, timed_out, killed_by and oom_killed (not `at`: the event
    // has its own). Without one (a launch failure) code and signal are null, duration 0.
    std::optional<ExitInfo> exit;
    std::optional<std::string> launch_error;  // the launch failure's message
    bool operator==(const ExitedFields&) const = default;
};

struct Event {
    std::string type;                    // started, exited, restarting, ready, ...
    std::optional<std::string> service;  // null for group_failed and daemon-wide events
    std::optional<std::string> group;
    double at = 0;                       // unix seconds
    std::optional<std::int64_t> pid;     // started
    std::optional<std::uint64_t> run;    // started, exited, ready
    std::optional<ExitedFields> exited;  // exited
    std::optional<double> delay;         // restarting: seconds until the restart
    std::optional<int> restart;          // restarting: the restart's number
    std::optional<double> pause;         // storm_pause: seconds
    std::optional<std::string> status;   // health: "healthy" or "unhealthy"
    std::optional<std::string> reason;   // plain words, when the event has them
    bool operator==(const Event&) const = default;
};

void to_json(json& out, const Event& value);

}  // namespace pkit::proto
