#include "daemon/shell/http/metrics.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <optional>

namespace pkit::shell::http {

namespace {

constexpr std::array k_states{
    core::State::waiting,  core::State::starting, core::State::running,
    core::State::stopping, core::State::backoff,  core::State::storm_pause,
    core::State::stopped,  core::State::done,     core::State::failed};

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

std::string render_metrics(const MetricsInput& input) {
    const core::Supervisor& sup = *input.supervisor;
    const std::vector<std::size_t>& order = sup.start_order();
    std::string out;
    out.reserve(2048 + order.size() * 1600);

    family(out, "pkit_build_info", "gauge", "pkitd's version; always 1.");
    out += "pkit_build_info{version=\"";
    append_escaped(out, input.version);
    out += "\"} 1\n";
    family(out, "pkit_start_time_seconds", "gauge", "When pkitd started, in unix seconds.");
    out += "pkit_start_time_seconds ";
    append_number(out, input.start_time);
    family(out.append("\n"), "pkit_ready", "gauge", "1 when pkitd is ready (SPEC section 11).");
    out += input.ready ? "pkit_ready 1\n" : "pkit_ready 0\n";
    family(out, "pkit_orphans_reaped_total", "counter",
           "Processes pkitd reaped that were none of its runs.");
    out += "pkit_orphans_reaped_total ";
    append_number(out, static_cast<double>(input.orphans_reaped));
    family(out.append("\n"), "pkit_storm_pauses_total", "counter",
           "Pauses of the daemon-wide storm guard.");
    out += "pkit_storm_pauses_total ";
    append_number(out, sup.daemon_storm_pauses());
    out += '\n';

    std::vector<std::string> labels;  // each service's, in start order
    labels.reserve(order.size());
    for (std::size_t i : order) {
        labels.push_back(service_labels(sup.service(i)));
    }
    std::array<std::string, k_states.size()> state_labels;
    for (std::size_t j = 0; j < k_states.size(); ++j) {
        state_labels[j] = "state=\"" + std::string(core::to_string(k_states[j])) + "\"";
    }

    family(out, "pkit_service_state", "gauge", "1 for the service's current state, else 0.");
    for (std::size_t k = 0; k < order.size(); ++k) {
        const core::Service& s = sup.service(order[k]);
        for (std::size_t j = 0; j < k_states.size(); ++j) {
            service_sample(out, "pkit_service_state", labels[k], s.state() == k_states[j] ? 1 : 0,
                           state_labels[j]);
        }
    }

    auto per_service = [&](std::string_view name, std::string_view type, std::string_view help,
                           const auto& value) {
        family(out, name, type, help);
        for (std::size_t k = 0; k < order.size(); ++k) {
            const core::Service& s = sup.service(order[k]);
            if (std::optional<double> v = value(k, s)) {
                service_sample(out, name, labels[k], *v);
            }
        }
    };
    const proto::Resources none{};
    auto resources = [&](std::size_t k) -> const proto::Resources& {
        return k < input.resources.size() ? input.resources[k] : none;
    };

    per_service("pkit_service_ready", "gauge", "1 when the service's run is ready.",
                [](std::size_t, const core::Service& s) -> std::optional<double> {
                    return s.state() == core::State::running && s.ready() ? 1 : 0;
                });
    per_service("pkit_service_healthy", "gauge",
                "1 healthy, 0 unhealthy or unknown; services with a liveness probe only.",
                [](std::size_t, const core::Service& s) -> std::optional<double> {
                    if (auto health = s.health()) {
                        return *health == core::HealthStatus::healthy ? 1 : 0;
                    }
                    return std::nullopt;
                });
    per_service("pkit_service_runs_total", "counter", "Runs started over pkitd's life.",
                [](std::size_t, const core::Service& s) -> std::optional<double> {
                    return static_cast<double>(s.run());
                });
    per_service(
        "pkit_service_restarts_total", "counter", "Automatic restarts.",
        [](std::size_t, const core::Service& s) -> std::optional<double> { return s.restarts(); });
    per_service("pkit_service_crashes_total", "counter", "Crashed runs.",
                [](std::size_t, const core::Service& s) -> std::optional<double> {
                    return static_cast<double>(s.crashes_counted());
                });
    per_service("pkit_service_liveness_kills_total", "counter",
                "Runs stopped by failed liveness probes.",
                [](std::size_t, const core::Service& s) -> std::optional<double> {
                    return s.liveness_kills();
                });
    per_service("pkit_service_storm_pauses_total", "counter",
                "Pauses of the service's own storm guard.",
                [](std::size_t, const core::Service& s) -> std::optional<double> {
                    return s.storm_pauses();
                });
    per_service("pkit_service_last_exit_code", "gauge",
                "Exit code of the latest completed run, while it had one.",
                [](std::size_t, const core::Service& s) -> std::optional<double> {
                    if (s.last_exit() && s.last_exit()->code) {
                        return *s.last_exit()->code;
                    }
                    return std::nullopt;
                });
    per_service("pkit_service_start_time_seconds", "gauge",
                "When the latest run started, in unix seconds.",
                [](std::size_t, const core::Service& s) -> std::optional<double> {
                    if (s.run() > 0) {
                        return s.started_wall();
                    }
                    return std::nullopt;
                });
    per_service("pkit_service_processes", "gauge", "Live processes of the current run.",
                [&](std::size_t k, const core::Service&) -> std::optional<double> {
                    return resources(k).processes;
                });
    per_service("pkit_service_cpu_seconds_total", "counter",
                "User and system CPU seconds of the current run's processes and what they "
                "reaped; resets with each run.",
                [&](std::size_t k, const core::Service&) -> std::optional<double> {
                    return resources(k).cpu_seconds;
                });
    per_service("pkit_service_resident_memory_bytes", "gauge",
                "Resident memory of the current run's processes.",
                [&](std::size_t k, const core::Service&) -> std::optional<double> {
                    return static_cast<double>(resources(k).rss_bytes);
                });
    return out;
}

}  // namespace pkit::shell::http
