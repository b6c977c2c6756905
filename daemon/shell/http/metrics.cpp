#include "daemon/shell/http/metrics.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <optional>

namespace pkit::shell::http {

namespace {

constexpr std::array k_states{
    core::State::waiting, core::State::starting,    core::State::running, core::State::stopping,
    core::State::backoff, core::State::storm_pause, core::State::stopped, core::State::done,
    core::State::failed,  core::State::scheduled,   core::State::paused};

// The shortest text that reads back as the same double ("3", "1764578012.25").
void append_number(std::string& out, double value) {
    if (!std::isfinite(value)) {
        out += std::isnan(value) ? "NaN" : value > 0 ? "+Inf" : "-Inf";
        return;
    }
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
    out.append(buf, ec == std::errc{} ? end : buf);
}

void family(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
    out += "# HELP ";
    out += name;
    out += ' ';
    out += help;
    out += "\n# TYPE ";
    out += name;
    out += ' ';
    out += type;
    out += '\n';
}

// `value` escaped for a label (see escape_label), appended to `out`.
void append_escaped(std::string& out, std::string_view value) {
    for (char c : value) {
        if (c == '\\') {
            out += "\\\\";
        } else if (c == '"') {
            out += "\\\"";
        } else if (c == '\n') {
            out += "\\n";
        } else {
            out += c;
        }
    }
}

// `{service="..",group=".."` of one service: escaped once a scrape, not once a sample.
std::string service_labels(const core::Service& s) {
    std::string labels = "{service=\"";
    append_escaped(labels, s.name());
    labels += '"';
    if (s.group()) {
        labels += ",group=\"";
        append_escaped(labels, *s.group());
        labels += '"';
    }
    return labels;
}

// `name{service="..",group=".."[,extra]} value`; `labels` from service_labels().
void service_sample(std::string& out, std::string_view name, std::string_view labels, double value,
                    std::string_view extra = {}) {
    out += name;
    out += labels;
    if (!extra.empty()) {
        out += ',';
        out += extra;
    }
    out += "} ";
    append_number(out, value);
    out += '\n';
}

}  // namespace

std::string escape_label(std::string_view value) {
    std::string out;
    out.reserve(value.size());
    append_escaped(out, value);
    return out;
}

MetricsSnapshot snapshot_metrics(const MetricsInput& input) {
    const core::Supervisor& sup = *input.supervisor;
    const std::vector<std::size_t>& order = sup.start_order();
    MetricsSnapshot snap;
    snap.version = input.version;
    snap.start_time = input.start_time;
    snap.ready = input.ready;
    snap.orphans_reaped = input.orphans_reaped;
    snap.storm_pauses = static_cast<double>(sup.daemon_storm_pauses());
    snap.rows.resize(order.size());
    for (std::size_t k = 0; k < order.size(); ++k) {
        const core::Service& s = sup.service(order[k]);
        MetricsRow& row = snap.rows[k];
        row.labels = service_labels(s);
        row.state = s.state();
        row.ready = s.state() == core::State::running && s.ready();
        if (auto health = s.health()) {
            row.healthy = *health == core::HealthStatus::healthy;
        }
        row.runs = static_cast<double>(s.run());
        row.restarts = static_cast<double>(s.restarts());
        row.crashes = static_cast<double>(s.crashes_counted());
        row.liveness_kills = static_cast<double>(s.liveness_kills());
        row.oom_kills = static_cast<double>(s.oom_kills());
        row.memory_kills = static_cast<double>(s.memory_kills());
        row.storm_pauses = static_cast<double>(s.storm_pauses());
        if (s.last_exit() && s.last_exit()->code) {
            row.last_exit_code = *s.last_exit()->code;
        }
        if (s.run() > 0) {
            row.start_time = s.started_wall();
        }
        if (k < input.resources.size()) {
            row.resources = input.resources[k];
        }
        if (s.has_schedule()) {
            const core::ScheduleRecord& r = s.schedule();
            if (r.armed && r.tick) {
                row.next_run = r.tick_wall;
            }
            row.last_success = r.last_success;
            row.missed_runs = static_cast<double>(r.missed);
        }
    }
    return snap;
}

namespace {

// The per-service families after pkit_service_state, in the contract's order.
struct Family {
    std::string_view name;
    std::string_view type;
    std::string_view help;
    std::optional<double> (*value)(const MetricsRow&);
};

constexpr std::array k_families{
    Family{"pkit_service_ready", "gauge", "1 when the service's run is ready.",
           [](const MetricsRow& r) -> std::optional<double> { return r.ready ? 1 : 0; }},
    Family{"pkit_service_healthy", "gauge",
           "1 healthy, 0 unhealthy or unknown; services with a liveness probe only.",
           [](const MetricsRow& r) -> std::optional<double> {
               if (r.healthy) {
                   return *r.healthy ? 1 : 0;
               }
               return std::nullopt;
           }},
    Family{"pkit_service_runs_total", "counter", "Runs started over pkitd's life.",
           [](const MetricsRow& r) -> std::optional<double> { return r.runs; }},
    Family{"pkit_service_restarts_total", "counter", "Automatic restarts.",
           [](const MetricsRow& r) -> std::optional<double> { return r.restarts; }},
    Family{"pkit_service_crashes_total", "counter", "Crashed runs.",
           [](const MetricsRow& r) -> std::optional<double> { return r.crashes; }},
    Family{"pkit_service_liveness_kills_total", "counter",
           "Runs stopped by failed liveness probes.",
           [](const MetricsRow& r) -> std::optional<double> { return r.liveness_kills; }},
    Family{"pkit_service_oom_kills_total", "counter",
           "Runs during which the kernel's OOM killer killed a process of the service's cgroup.",
           [](const MetricsRow& r) -> std::optional<double> { return r.oom_kills; }},
    Family{"pkit_service_memory_kills_total", "counter", "Runs stopped over [health] memory_max.",
           [](const MetricsRow& r) -> std::optional<double> { return r.memory_kills; }},
    Family{"pkit_service_storm_pauses_total", "counter", "Pauses of the service's own storm guard.",
           [](const MetricsRow& r) -> std::optional<double> { return r.storm_pauses; }},
    Family{"pkit_service_last_exit_code", "gauge",
           "Exit code of the latest completed run, while it had one.",
           [](const MetricsRow& r) { return r.last_exit_code; }},
    Family{"pkit_service_start_time_seconds", "gauge",
           "When the latest run started, in unix seconds.",
           [](const MetricsRow& r) { return r.start_time; }},
    Family{"pkit_service_processes", "gauge", "Live processes of the current run.",
           [](const MetricsRow& r) -> std::optional<double> { return r.resources.processes; }},
    Family{"pkit_service_cpu_seconds_total", "counter",
           "User and system CPU seconds of the current run's processes and what they "
           "reaped; resets with each run.",
           [](const MetricsRow& r) -> std::optional<double> { return r.resources.cpu_seconds; }},
    Family{"pkit_service_resident_memory_bytes", "gauge",
           "Resident memory of the current run's processes.",
           [](const MetricsRow& r) -> std::optional<double> {
               return static_cast<double>(r.resources.rss_bytes);
           }},
    Family{"pkit_service_next_run_timestamp_seconds", "gauge",
           "When a scheduled job's next episode starts, in unix seconds; while armed.",
           [](const MetricsRow& r) { return r.next_run; }},
    Family{"pkit_service_last_success_timestamp_seconds", "gauge",
           "When a scheduled job's latest episode that ended done ended, in unix seconds.",
           [](const MetricsRow& r) { return r.last_success; }},
    Family{"pkit_service_missed_runs_total", "counter",
           "Ticks of a scheduled job that came while an episode ran.",
           [](const MetricsRow& r) { return r.missed_runs; }},
    Family{"pkit_service_log_bytes_total", "counter",
           "Bytes written to the service's log file since pkitd opened it.",
           [](const MetricsRow& r) { return r.log_bytes; }},
    Family{"pkit_service_log_dropped_lines_total", "counter",
           "Lines of the service's output its log file lost (a failing or stalled disk).",
           [](const MetricsRow& r) { return r.log_dropped; }},
    Family{"pkit_service_log_rotations_total", "counter", "Rotations of the service's log file.",
           [](const MetricsRow& r) { return r.log_rotations; }},
};

// `state="..."` of each state, in k_states' order.
const std::array<std::string, k_states.size()>& state_labels() {
    static const auto labels = [] {
        std::array<std::string, k_states.size()> out;
        for (std::size_t j = 0; j < k_states.size(); ++j) {
            out[j] = "state=\"" + std::string(core::to_string(k_states[j])) + "\"";
        }
        return out;
    }();
    return labels;
}

}  // namespace

MetricsRender::MetricsRender(MetricsSnapshot snapshot) : m_snapshot(std::move(snapshot)) {}

namespace {

// pkitd's own process_* families, as the Prometheus clients name them, so a
// dashboard made for any exporter shows pkitd too.
void render_own_process(std::string& out, const MetricsSnapshot& snap) {
    auto sample = [&out](const char* name, double value) {
        out += name;
        out += ' ';
        append_number(out, value);
        out += '\n';
    };
    family(out, "process_start_time_seconds", "gauge",
           "Start time of the process since the unix epoch, in seconds.");
    sample("process_start_time_seconds", snap.start_time);
    if (!snap.own) {
        return;
    }
    family(out, "process_cpu_seconds_total", "counter",
           "Total user and system CPU time spent, in seconds.");
    sample("process_cpu_seconds_total", snap.own->cpu_seconds);
    family(out, "process_resident_memory_bytes", "gauge", "Resident memory size, in bytes.");
    sample("process_resident_memory_bytes", static_cast<double>(snap.own->rss_bytes));
    family(out, "process_open_fds", "gauge", "Number of open file descriptors.");
    sample("process_open_fds", static_cast<double>(snap.own->open_fds));
    if (snap.own->max_fds > 0) {
        family(out, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
        sample("process_max_fds", static_cast<double>(snap.own->max_fds));
    }
}

}  // namespace

bool MetricsRender::step(std::size_t samples) {
    const MetricsSnapshot& snap = m_snapshot;
    std::string& out = m_out;
    if (!m_started) {
        m_started = true;
        out.reserve(2048 + snap.rows.size() * 1600);
        family(out, "pkit_build_info", "gauge", "pkitd's version; always 1.");
        out += "pkit_build_info{version=\"";
        append_escaped(out, snap.version);
        out += "\"} 1\n";
        family(out, "pkit_start_time_seconds", "gauge", "When pkitd started, in unix seconds.");
        out += "pkit_start_time_seconds ";
        append_number(out, snap.start_time);
        family(out.append("\n"), "pkit_ready", "gauge",
               "1 when pkitd is ready (what /readyz answers with 200).");
        out += snap.ready ? "pkit_ready 1\n" : "pkit_ready 0\n";
        family(out, "pkit_orphans_reaped_total", "counter",
               "Processes pkitd reaped that were none of its runs.");
        out += "pkit_orphans_reaped_total ";
        append_number(out, static_cast<double>(snap.orphans_reaped));
        family(out.append("\n"), "pkit_storm_pauses_total", "counter",
               "Pauses of the daemon-wide storm guard.");
        out += "pkit_storm_pauses_total ";
        append_number(out, snap.storm_pauses);
        out += '\n';
        render_own_process(out, snap);
        family(out, "pkit_service_state", "gauge", "1 for the service's current state, else 0.");
    }
    // Family 0 is pkit_service_state (a sample for each state, a row); family f > 0 is
    // k_families[f - 1].
    std::size_t done = 0;
    while (m_family <= k_families.size() && done < samples) {
        if (m_row == snap.rows.size()) {
            m_row = 0;
            ++m_family;
            if (m_family <= k_families.size()) {
                const Family& f = k_families[m_family - 1];
                family(out, f.name, f.type, f.help);
            }
            continue;
        }
        const MetricsRow& row = snap.rows[m_row++];
        if (m_family == 0) {
            for (std::size_t j = 0; j < k_states.size(); ++j) {
                service_sample(out, "pkit_service_state", row.labels,
                               row.state == k_states[j] ? 1 : 0, state_labels()[j]);
            }
            done += k_states.size();
        } else {
            const Family& f = k_families[m_family - 1];
            if (std::optional<double> v = f.value(row)) {
                service_sample(out, f.name, row.labels, *v);
            }
            ++done;
        }
    }
    return m_family > k_families.size();
}

}  // namespace pkit::shell::http
