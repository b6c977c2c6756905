#pragma once
// `pkitctl events` for people: one aligned line per event, with its local time, who
// it is about, and only the fields that carry something:
//   12:03:04.512 web     exited code 1 after 3.0s (run 4)
// and the --service/--type filters. Pure functions of the event objects (SPEC §9).

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "proto/protocol.hpp"

namespace pkit::ctl {

// The event types of SPEC §9, in its order (the values --type accepts).
const std::vector<std::string>& event_types();

// Which events to show: none of the lists given means every event.
struct EventFilter {
    // --service: the event's `service`, or the file it is an instance of, is one of
    // these, or matches one that is a glob (`worker@*`, fnmatch(3))
    std::vector<std::string> services;
    std::vector<std::string> types;  // --type: its `type` is one of these
    bool matches(const proto::json& event) const;
    // Throws CtlError(1) for the first of `services` that names none of `known` (the
    // services pkitd has, instances by their NAME@I): "unknown_service: unknown service
    // \"wbe\"; did you mean \"web\"?", or "no service matches \"GLOB\"", as status says.
    void check_services(const std::vector<std::string>& known) const;
};

// The name column of an event: its service; "GROUP/" for a group's own event
// (group_failed); "pkitd" for the daemon's (escalated, reload).
std::string event_subject(const proto::json& event);

// What happened, in words: "exited code 1 after 3.0s (run 4)", "restarting in 0.40s
// (restart 2)". Fields that are null, false or empty are left out; an unknown type is
// its name followed by its other fields as key=value.
std::string event_words(const proto::json& event);

// The whole line (no newline): time, subject padded to `subject_width`, words.
std::string event_line(const proto::json& event, std::size_t subject_width);

}  // namespace pkit::ctl
