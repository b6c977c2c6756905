#pragma once
// Human output of status rows: the table and the tree of SPEC §10. Pure functions of
// their input, so the layout does not depend on where pkitctl runs; colour is decided
// once, by the caller, with use_color().

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ctl/color.hpp"      // use_color()
#include "ctl/time_text.hpp"  // unix_now()
#include "proto/status.hpp"

namespace pkit::ctl {

// The members of a status row that render_table and render_tree read (besides the
// name), which is all `pkitctl status` asks pkitd for (the request's "fields").
inline const std::vector<std::string> k_rendered_fields = {
    "group",  "type",      "state",   "pid", "uptime", "restarts", "last_exit", "last_launch_error",
    "health", "resources", "schedule"};

// NAME, [GROUP,] STATE, PID, UPTIME, RESTARTS, LAST EXIT, HEALTH; one row a service
// in the given order, columns aligned. GROUP appears when any service has a group.
// With a `width` (a terminal's columns), names too long for it are cut with "…" (to
// no fewer than 12 columns); 0: never cut. A `scheduled` job shows the time to its next
// run in UPTIME ("in 4m12s"), from `now`.
std::string render_table(const std::vector<proto::ServiceStatus>& services, bool color,
                         std::size_t width = 0, double now = unix_now());

// In the given (start) order: a service in no group as a row of its own; a group as a
// line "NAME/" where its first member comes, with all its members indented below it.
// `width` and `now` as for render_table.
std::string render_tree(const std::vector<proto::ServiceStatus>& services, bool color,
                        std::size_t width = 0, double now = unix_now());

// "3m12s" for an uptime, "-" for none.
std::string uptime_text(std::optional<double> seconds);

// The UPTIME cell: the uptime, or for a `scheduled` job "in 4m12s" to its next run.
std::string uptime_cell(const proto::ServiceStatus& status, double now);

// "exit 1", "SIGKILL", "SIGKILL (liveness)", "launch failed: not_found", or "-".
std::string last_exit_text(const proto::ServiceStatus& status);

// Resident memory as the MEM column shows it: "512B", "35M", "1.2G" (binary units).
std::string memory_text(std::int64_t bytes);

// CPU seconds as the CPU column shows them: "12.3".
std::string cpu_text(double seconds);

// "healthy", "unhealthy", "unknown", or "-" without a liveness probe.
std::string health_text(const proto::ServiceStatus& status);

}  // namespace pkit::ctl
