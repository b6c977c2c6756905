#pragma once
// The Prometheus text exposition (format 0.0.4) of SPEC §11: names, types and labels
// are part of the contract. Rendered on request from the core's records, so counters
// reset exactly when the status counters do (a reload or `start` making them fresh).

#include <sys/types.h>
#include <cstddef>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/readiness.hpp"
#include "daemon/core/supervisor.hpp"
#include "daemon/shell/cgroup/run_resources.hpp"
#include "daemon/shell/io/resources.hpp"
#include "proto/status.hpp"

namespace pkit::shell::http {

inline constexpr std::string_view k_metrics_content_type = "text/plain; version=0.0.4";

// What the metrics are made of, besides the services.
struct MetricsInput {
    const core::Supervisor* supervisor = nullptr;
    std::string version;
    double start_time = 0;  // pkitd's start, unix seconds
    bool ready = false;
    std::uint64_t orphans_reaped = 0;
    // The resources of each service in start order (start_order()'s positions);
    // empty entries (processes 0) for services without a run.
    std::vector<proto::Resources> resources;
};

// One service's values for a scrape, copied out of the core so that a render may span
// several turns of the loop while the services change (or a reload replaces them).
struct MetricsRow {
    std::string labels;  // `{service="..",group=".."`, escaped, without the closing brace
    core::State state = core::State::waiting;
    bool ready = false;
    std::optional<bool> healthy;  // services with a liveness probe only
    double runs = 0, restarts = 0, crashes = 0, liveness_kills = 0, storm_pauses = 0;
    double oom_kills = 0;
    double memory_kills = 0;  // SPEC §20
    std::optional<double> last_exit_code;
    std::optional<double> start_time;
    proto::Resources resources;
    // Scheduled jobs only (SPEC §12): the next tick while armed, the latest episode
    // that ended done, ticks missed.
    std::optional<double> next_run;
    std::optional<double> last_success;
    std::optional<double> missed_runs;
    // Services with a log file only (SPEC §18): bytes written, lines dropped, rotations.
    std::optional<double> log_bytes;
    std::optional<double> log_dropped;
    std::optional<double> log_rotations;
};

// Everything a scrape shows, taken at one moment: cheap next to rendering it.
struct MetricsSnapshot {
    std::string version;
    double start_time = 0;
    bool ready = false;
    std::uint64_t orphans_reaped = 0;
    double storm_pauses = 0;
    std::vector<MetricsRow> rows;  // in start order
    // Each row's run's process group (0: no run), when its resources are still to be
    // read (MetricsCache reads them off the loop); empty when `rows` have them.
    std::vector<pid_t> groups;
    // With cgroups, each row's cgroup (same order as `groups`; empty without): the
    // resources then come from it, as `status`'s do.
    std::vector<RunCgroupRead> cgroups;
    // pkitd's own process (read with the groups' pass); nullopt: not read.
    std::optional<OwnProcess> own;
};

MetricsSnapshot snapshot_metrics(const MetricsInput& input);

// The exposition of a snapshot, rendered a slice at a time: step() renders at most
// `samples` more per-service samples, so the caller decides how long each slice holds
// the loop. The cost is linear in the number of services.
class MetricsRender {
public:
    explicit MetricsRender(MetricsSnapshot snapshot);
    // Renders up to `samples` more samples; true once the exposition is complete.
    bool step(std::size_t samples);
    // The exposition, once step() returned true; leaves the render empty.
    std::string take() { return std::move(m_out); }
    // The text rendered since the last clear_text(), for a caller that writes it out
    // as it goes.
    std::string_view text() const { return m_out; }
    void clear_text() { m_out.clear(); }

private:
    MetricsSnapshot m_snapshot;
    std::string m_out;
    std::size_t m_family = 0;  // the per-service family being rendered
    std::size_t m_row = 0;     // the next row of that family
    bool m_started = false;
};

// A label value escaped for the exposition format: \ " and newline.
std::string escape_label(std::string_view value);

}  // namespace pkit::shell::http
