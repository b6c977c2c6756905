#pragma once
// What the HTTP endpoint may ask of the daemon above it, and nothing more (SPEC §11):
// the endpoint only reads. It holds an HttpPort, never the Daemon, as the control room
// holds a DaemonPort: the Supervisor to read, the clock, pkitd's uptime and orphan
// count for /metrics, each run's cgroup for the resources pass, the loop it listens
// on, and pkitd's log. It commands nothing.

#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/supervisor.hpp"
#include "daemon/shell/cgroup/run_resources.hpp"
#include "daemon/shell/logfile/log_files.hpp"

namespace pkit::shell::http {

class HttpPort {
public:
    virtual uv_loop_t* loop() const = 0;
    // The Supervisor as it is; reading never waits for anything.
    virtual const core::Supervisor& supervisor() const = 0;
    virtual core::Now now() const = 0;
    // Seconds since pkitd started (across upgrades in place).
    virtual double uptime() const = 0;
    // Exits of processes that were no run of pkitd's (SPEC §11 metrics).
    virtual std::uint64_t orphans_reaped() const = 0;
    // Each of `services`' cgroup, for a read of their resources off the loop
    // (run_resources.hpp); empty without cgroups.
    virtual std::vector<RunCgroupRead> run_cgroup_reads(
        const std::vector<std::size_t>& services) const = 0;
    // SPEC §18: `service`'s log file counters; nullopt without one.
    virtual std::optional<LogFiles::Stats> log_file_stats(std::size_t) const {
        return std::nullopt;
    }
    // pkitd's own log.
    virtual void log(std::string_view level, const std::string& message) = 0;

protected:
    ~HttpPort() = default;
};

}  // namespace pkit::shell::http
