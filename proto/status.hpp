#pragma once
// The status objects of SPEC §5, with the exact wire names and types. Optional fields
// are written as JSON null, never omitted, so scripts can rely on every key.
// from_json throws nlohmann::json::exception on a missing or wrong-typed required
// field; pkitctl catches that once in main. (pkitd only writes these.)

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/fwd.hpp"

namespace pkit::proto {

// How the latest completed run ended.
struct ExitInfo {
    std::optional<int> code;            // the exit code, or null when killed by a signal
    std::optional<std::string> signal;  // "SIGKILL", or null for a normal exit
    double duration = 0;                // seconds the run lasted
    double at = 0;                      // unix seconds when it ended
    bool timed_out = false;             // ended by the service's `timeout`
    // Who killed it: "liveness", "timeout", "ready_timeout" or "operator"; null if no one.
    std::optional<std::string> killed_by;
    // The kernel's OOM killer killed a process of the run's cgroup while it ran (SPEC §15).
    bool oom_killed = false;
    bool operator==(const ExitInfo&) const = default;
};

struct HealthInfo {
    std::string status = "unknown";  // "unknown", "healthy" or "unhealthy"
    int failures = 0;                // failed probes in a row
    bool operator==(const HealthInfo&) const = default;
};

// What the processes of a run use (SPEC §5 `resources`), summed over its process group.
struct Resources {
    int processes = 0;
    double cpu_seconds = 0;  // user + system, of the live processes and of what they reaped
    std::int64_t rss_bytes = 0;
    bool operator==(const Resources&) const = default;
};

// What became of a service's [resources] (SPEC §15): the keys written to its cgroup, and
// those that were not, each with the reason.
struct LimitNotApplied {
    std::string key;
    std::string reason;
    bool operator==(const LimitNotApplied&) const = default;
};
struct ResourceLimitsInfo {
    std::vector<std::string> applied;
    std::vector<LimitNotApplied> not_applied;
    bool operator==(const ResourceLimitsInfo&) const = default;
};

// A scheduled job's side of its status (SPEC §12).
struct ScheduleInfo {
    std::string expression;
    std::optional<double> next;              // unix seconds of the next tick; null when disarmed
    std::optional<double> last_started;      // unix seconds the latest episode started
    std::optional<std::string> last_result;  // "done" or "failed"; null before the first end
    std::int64_t missed = 0;                 // ticks that came while an episode ran
    bool operator==(const ScheduleInfo&) const = default;
};

// A service's log file (SPEC §18): its path, its size as pkitd last wrote it, and the
// rotations done and lines dropped since pkitd (or a reload) opened it.
struct LogFileInfo {
    std::string path;
    std::int64_t size = 0;
    std::int64_t rotations = 0;
    std::int64_t dropped = 0;
    bool operator==(const LogFileInfo&) const = default;
};

// A field written only when the request asked for it: absent otherwise (not null),
// and null when asked for but there is nothing to report.
template <typename T>
struct Requested {
    bool asked = false;
    std::optional<T> value;
    bool operator==(const Requested&) const = default;
};

// One service's status (SPEC §5).
struct ServiceStatus {
    std::string name;
    std::string state;  // waiting, starting, running, stopping, backoff, storm_pause, ...
    std::optional<std::string> group;  // null for a service in no group
    std::optional<int> pid;
    int run = 0;                       // 0 before the first run
    std::optional<double> started_at;  // unix seconds of the latest run
    std::optional<double> uptime;      // while a run exists (starting, running, stopping)
    bool ready = false;
    int restarts = 0;
    int storm_pauses = 0;
    int liveness_kills = 0;
    // Why supervision ended: policy_satisfied, predicate, restarts_exhausted, gave_up,
    // unhealthy or operator; null while supervised.
    std::optional<std::string> stopped;
    std::optional<double> next_restart_in;
    std::optional<HealthInfo> health;  // null without a liveness probe
    std::optional<std::string> notify_status;
    std::optional<ExitInfo> last_exit;
    std::optional<std::string> last_launch_error;  // "not_found: /usr/bin/x: No such file..."
    std::string type = "service";                  // "service" or "oneshot"
    // The service's stop.timeout and [ready] timeout (null without [ready]), in seconds:
    // pkitctl sizes its wait for a stop or restart reply from them.
    double stop_timeout = 5.0;
    std::optional<double> ready_timeout;
    Requested<Resources> resources;  // status with "resources": null without a current run
    // null while the service's [resources] sets no key, or before pkitd applied them.
    std::optional<ResourceLimitsInfo> resource_limits;
    // start_first (SPEC §14): the pid of the run being replaced while it is alive.
    std::optional<int> draining_pid;
    std::optional<ScheduleInfo> schedule;  // null without `schedule`
    // SPEC §19: the [security] protections in effect, one a string ("no_new_privileges",
    // "capabilities CAP_NET_BIND_SERVICE", "protect_system strict", "writable_paths
    // /srv/data", ...); null without [security].
    std::optional<std::vector<std::string>> security;
    std::optional<LogFileInfo> log_file;  // null without a log file (SPEC §18)
    bool operator==(const ServiceStatus&) const = default;
};

// The `daemon` object of `status`.
// The daemon's cgroups (SPEC §15): in use under `path` with `controllers`, or not and
// why (`reason`).
struct CgroupsInfo {
    bool enabled = false;
    std::optional<std::string> path;
    std::vector<std::string> controllers;
    std::optional<std::string> reason;
    bool operator==(const CgroupsInfo&) const = default;
};

struct DaemonStatus {
    int pid = 0;
    std::string version;
    int protocol = k_protocol_version;
    double uptime = 0;
    std::string config_dir;
    std::string socket;
    std::string state = "running";  // "running" or "shutting_down"
    int orphans_reaped = 0;
    int storm_pauses = 0;
    CgroupsInfo cgroups;
    bool operator==(const DaemonStatus&) const = default;
};

// The result of `ping`.
struct PingResult {
    int pid = 0;
    std::string version;
    int protocol = k_protocol_version;
    double uptime = 0;
    bool operator==(const PingResult&) const = default;
};

// The result of `status`: services in start order.
struct StatusResult {
    DaemonStatus daemon;
    std::vector<ServiceStatus> services;
    bool operator==(const StatusResult&) const = default;
};

// The result of start, stop, restart and signal: the affected services' status.
struct ServicesResult {
    std::vector<ServiceStatus> services;
    bool operator==(const ServicesResult&) const = default;
};

// The whole reply line {"id", "ok": true, "result"} of `status` and of start, stop,
// restart and signal, written straight into one string: the same bytes as
// ok_reply(id, json(result)) without the DOM, which for a thousand services costs
// several milliseconds and megabytes of short-lived maps.
// `fields` (a status request's "fields"): only "name" and these members in each
// service object; empty: every member. The daemon object is always whole.
std::string ok_reply(const json& id, const StatusResult& result,
                     const std::vector<std::string>& fields = {});
std::string ok_reply(const json& id, const ServicesResult& result);
// The same reply as ok_reply(id, StatusResult{daemon, rows}, fields), its `count` rows
// filled one at a time by `fill(k, row)` into one ServiceStatus: at 10,000 services a
// vector of them is 7.6 MB of fresh pages for every request.
std::string ok_status_reply(const json& id, const DaemonStatus& daemon, std::size_t count,
                            const std::function<void(std::size_t, ServiceStatus&)>& fill,
                            const std::vector<std::string>& fields = {});

// The names of a service's status members (SPEC §5), in key order: what a status
// request's "fields" may list.
const std::vector<std::string>& status_fields();
bool is_status_field(std::string_view name);

void to_json(json& out, const Resources& value);
void from_json(const json& in, Resources& value);
void to_json(json& out, const ExitInfo& value);
void from_json(const json& in, ExitInfo& value);
void to_json(json& out, const HealthInfo& value);
void to_json(json& out, const CgroupsInfo& value);
void from_json(const json& in, CgroupsInfo& value);
void from_json(const json& in, HealthInfo& value);
void to_json(json& out, const ResourceLimitsInfo& value);
void from_json(const json& in, ResourceLimitsInfo& value);
void to_json(json& out, const ScheduleInfo& value);
void from_json(const json& in, ScheduleInfo& value);
void to_json(json& out, const LogFileInfo& value);
void from_json(const json& in, LogFileInfo& value);
void to_json(json& out, const ServiceStatus& value);
void from_json(const json& in, ServiceStatus& value);
void to_json(json& out, const DaemonStatus& value);
void from_json(const json& in, DaemonStatus& value);
void to_json(json& out, const PingResult& value);
void from_json(const json& in, PingResult& value);
void to_json(json& out, const StatusResult& value);
void from_json(const json& in, StatusResult& value);
void to_json(json& out, const ServicesResult& value);
void from_json(const json& in, ServicesResult& value);

}  // namespace pkit::proto
