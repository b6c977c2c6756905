#pragma once
// A status row with every awkward member the protocol's writers and readers must agree
// on, varied by k: optional members present and absent, an exit by code and by signal,
// resources asked for with and without a value, and a notify text with quotes, control
// characters, bad UTF-8 and a literal \u escape. Shared by the proto unit tests.

#include <optional>
#include <string>
#include <vector>

#include "proto/status.hpp"

namespace pkit::proto::test {

inline ServiceStatus awkward_status(int k) {
    ServiceStatus status;
    status.name = "svc-" + std::to_string(k);
    status.state = k % 2 ? "running" : "backoff";
    status.group = k % 3 ? std::nullopt : std::optional<std::string>("g");
    status.pid = k % 2 ? std::optional<int>(1000 + k) : std::nullopt;
    status.run = k;
    status.started_at = 1700000000.0 + k / 7.0;
    status.uptime = k % 2 ? std::optional<double>(k * 0.001) : std::nullopt;
    status.ready = k % 2 == 1;
    status.restarts = k;
    status.next_restart_in = k % 2 ? std::nullopt : std::optional<double>(1e-5 * k);
    status.health = k % 4 ? std::nullopt : std::optional<HealthInfo>(HealthInfo{"unhealthy", 3});
    // sd_notify STATUS= text is whatever the service sent: quotes, controls, bad UTF-8.
    status.notify_status = "say \"hi\"\t\\ caf\xc3\xa9 \xff\x01 \\u0041";
    status.last_exit = k % 2
                           ? std::optional<ExitInfo>(
                                 ExitInfo{.code = 1, .duration = 2.0, .oom_killed = k % 3 == 0})
                           : std::optional<ExitInfo>(ExitInfo{
                                 .signal = "SIGKILL", .timed_out = true, .killed_by = "liveness"});
    status.last_launch_error = k == 4 ? std::optional<std::string>("not_found: /x") : std::nullopt;
    status.type = k == 5 ? "oneshot" : "service";
    status.ready_timeout = k % 2 ? std::optional<double>(2.5) : std::nullopt;
    if (k % 5 == 2) {
        // A scheduled job: the next tick null (disarmed) or a time, an episode's result.
        status.schedule = ScheduleInfo{.expression = "*/5 * * * \"mon\"",
                                       .next = k % 2 ? std::nullopt : std::optional(1.7e9 + k),
                                       .last_started = 1.7e9,
                                       .last_result = "failed",
                                       .missed = k};
    }
    if (k % 3 == 2) {
        // A log file (SPEC §18) with a path that needs escaping, sizes past 32 bits.
        status.log_file = LogFileInfo{.path = "/var/log/\"k\"/svc.log",
                                      .size = 5'000'000'000 + k,
                                      .rotations = k,
                                      .dropped = k % 2};
    }
    if (k % 4 == 1) {
        // [resources]: some keys written, one not and why; or none written.
        status.resource_limits =
            ResourceLimitsInfo{.applied = k % 8 == 1 ? std::vector<std::string>{"cpu_max"}
                                                     : std::vector<std::string>{},
                               .not_applied = {{"memory_max", "no \"memory\" controller"},
                                               {"pids_max", "cannot write pids.max"}}};
    }
    if (k % 5 == 2) {
        // [security] in effect (SPEC §19); an empty list stands for a section of defaults.
        status.security =
            k % 10 == 2
                ? std::vector<std::string>{"no_new_privileges", "capabilities CAP_NET_BIND_SERVICE",
                                           "writable_paths /srv/\"data\""}
                : std::vector<std::string>{};
    }
    if (k % 3 == 1) {
        status.resources.asked = true;
        if (k % 2) {
            status.resources.value =
                Resources{.processes = 2, .cpu_seconds = 0.5, .rss_bytes = 5'000'000'000};
        }
    }
    return status;
}

}  // namespace pkit::proto::test
