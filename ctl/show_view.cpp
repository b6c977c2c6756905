#include "ctl/show_view.hpp"

#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "ctl/json_fields.hpp"
#include "ctl/render.hpp"
#include "ctl/time_text.hpp"

namespace pkit::ctl {
namespace {

// The text of a fact, "-" when null or absent.
std::string fact_or_dash(const proto::json& facts, std::string_view key) {
    auto text = text_of(facts, key);
    return text.empty() ? "-" : text;
}

// "3 (on_crash; at most 5 in a 1m window)": the restarts and what bounds them.
std::string restart_words(const proto::json& status, const proto::json& facts) {
    std::string text = integer_text(number_of(status, "restarts").value_or(0));
    std::vector<std::string> notes;
    if (auto policy = text_of(facts, "policy"); !policy.empty()) {
        notes.push_back("policy " + policy);
    }
    if (auto max = number_of(facts, "max_restarts")) {
        if (*max < 0) {
            notes.push_back("no limit");
        } else {
            auto within = number_of(facts, "within").value_or(0);
            notes.push_back(
                "at most " + integer_text(*max) +
                (within > 0 ? " in a " + seconds_words(within) + " window" : " in pkitd's life"));
            if (auto counted = number_of(facts, "restarts_counted")) {
                notes.push_back(integer_text(*counted) + " counted");
            }
        }
    }
    for (auto key : {"storm_pauses", "liveness_kills"}) {
        if (auto n = number_of(status, key); n && *n > 0) {
            std::string name(key);
            name.replace(name.find('_'), 1, " ");
            notes.push_back(integer_text(*n) + " " + name);
        }
    }
    std::string joined;
    for (const auto& note : notes) {
        joined += (joined.empty() ? "" : "; ") + note;
    }
    return joined.empty() ? text : text + " (" + joined + ")";
}

// "http ... every 10s: healthy" for the liveness probe, with its last result.
std::string liveness_words(const proto::json& status, const proto::json& facts) {
    std::string probe = text_of(facts, "liveness");
    auto health = status.find("health");
    if (health == status.end() || !health->is_object()) {
        return probe.empty() ? "-" : probe;
    }
    std::string result = text_of(*health, "status");
    if (auto failures = number_of(*health, "failures"); failures && *failures > 0) {
        result += " (" + integer_text(*failures) + " failed in a row)";
    }
    return probe.empty() ? result : probe + ": " + result;
}

std::string readiness_words(const proto::json& status, const proto::json& facts) {
    std::string probe = text_of(facts, "readiness");
    if (probe.empty()) {
        return "-";
    }
    return probe + ": " + (status.value("ready", false) ? "ready" : "not ready");
}

std::string resources_words(const proto::json& status) {
    auto used = status.find("resources");
    if (used == status.end() || !used->is_object()) {
        return "-";
    }
    auto processes = number_of(*used, "processes").value_or(0);
    return integer_text(processes) + (processes == 1 ? " process" : " processes") + ", CPU " +
           seconds_words(number_of(*used, "cpu_seconds").value_or(0)) + ", memory " +
           memory_text(static_cast<std::int64_t>(number_of(*used, "rss_bytes").value_or(0)));
}

// [resources] as pkitd applied them: "cpu_max, pids_max; not applied: memory_max (the
// memory controller is not available in /x)"; empty when the service sets none.
std::string limits_words(const proto::json& status) {
    auto limits = status.find("resource_limits");
    if (limits == status.end() || !limits->is_object()) {
        return "";
    }
    std::string text;
    for (const auto& key : limits->value("applied", proto::json::array())) {
        if (key.is_string()) {
            text += (text.empty() ? "" : ", ") + key.get<std::string>();
        }
    }
    std::string missing;
    for (const auto& entry : limits->value("not_applied", proto::json::array())) {
        if (entry.is_object()) {
            missing += (missing.empty() ? "" : "; ") + text_of(entry, "key") + " (" +
                       text_of(entry, "reason") + ")";
        }
    }
    if (!missing.empty()) {
        text += (text.empty() ? "" : "; ") + std::string("not applied: ") + missing;
    }
    return text;
}

// [security] in effect (SPEC §19): "no_new_privileges; capabilities CAP_NET_BIND_SERVICE;
// protect_system strict"; empty without [security].
std::string security_words(const proto::json& status) {
    auto security = status.find("security");
    if (security == status.end() || !security->is_array()) {
        return "";
    }
    std::string text;
    for (const auto& words : *security) {
        if (words.is_string()) {
            text += (text.empty() ? "" : "; ") + words.get<std::string>();
        }
    }
    return text;
}

std::string run_words(const proto::json& status) {
    auto run = number_of(status, "run").value_or(0);
    if (run == 0) {
        return "none yet";
    }
    std::string text = integer_text(run);
    if (auto pid = number_of(status, "pid")) {
        text += ", pid " + integer_text(*pid);
    }
    if (auto started = number_of(status, "started_at")) {
        text += ", started " + clock_text(*started);
    }
    return text;
}

// "@daily; next 2026-12-03 00:00:00 UTC (in 4h12m), then ..., ...; last episode done,
// started 2026-12-02 00:00:00 UTC; 2 ticks missed": a scheduled job's times.
std::string schedule_words(const proto::json& schedule, const proto::json& facts, double now) {
    std::string text = text_of(schedule, "expression");
    std::vector<double> upcoming;
    for (auto key : {"next_run_1", "next_run_2", "next_run_3"}) {
        if (auto at = number_of(facts, key)) {
            upcoming.push_back(*at);
        }
    }
    if (upcoming.empty()) {
        if (auto next = number_of(schedule, "next")) {
            upcoming.push_back(*next);
        }
    }
    if (upcoming.empty()) {
        text += "; disarmed (`pkitctl start` arms it)";
    } else {
        text += "; next " + date_time_text(upcoming[0]) + " (in " +
                seconds_words(std::max(0.0, upcoming[0] - now)) + ")";
        for (std::size_t k = 1; k < upcoming.size(); ++k) {
            text += (k == 1 ? ", then " : ", ") + date_time_text(upcoming[k]);
        }
    }
    if (auto result = text_of(schedule, "last_result"); !result.empty()) {
        text += "; last episode " + result;
    } else {
        text += "; no episode ended yet";
    }
    if (auto started = number_of(schedule, "last_started")) {
        text += ", started " + date_time_text(*started);
    }
    if (auto missed = number_of(schedule, "missed"); missed && *missed > 0) {
        text += "; " + integer_text(*missed) + (*missed == 1 ? " tick" : " ticks") + " missed";
    }
    return text;
}

}  // namespace

std::string state_words(const proto::json& status, double now) {
    const std::string state = text_of(status, "state");
    std::string text = state;
    if (auto stopped = text_of(status, "stopped"); !stopped.empty()) {
        text += " (" + stopped + ")";
    }
    // How long: the current run's uptime while there is one, else since the last exit.
    std::optional<double> lasted = number_of(status, "uptime");
    if (!lasted && status.contains("last_exit") && status["last_exit"].is_object()) {
        if (auto at = number_of(status["last_exit"], "at")) {
            lasted = std::max(0.0, now - *at);
        }
    }
    // A paused run's uptime is not how long it has been paused: explain says that.
    if (lasted && state != "waiting" && state != "scheduled" && state != "paused") {
        text += " for " + seconds_words(*lasted);
    }
    if (state == "scheduled" && status.contains("schedule") && status["schedule"].is_object()) {
        if (auto next = number_of(status["schedule"], "next")) {
            text += ", next run in " + seconds_words(std::max(0.0, *next - now));
        }
    }
    if (auto in = number_of(status, "next_restart_in")) {
        // `restarts` already counts the restart that is pending.
        text += ", restart " + integer_text(number_of(status, "restarts").value_or(0)) + " in " +
                seconds_words(*in);
    }
    return text;
}

std::string last_exit_words(const proto::json& status) {
    if (auto error = text_of(status, "last_launch_error"); !error.empty()) {
        return "launch failed: " + error;
    }
    auto exit = status.find("last_exit");
    if (exit == status.end() || !exit->is_object()) {
        return "none yet";
    }
    std::string text;
    if (auto signal = text_of(*exit, "signal"); !signal.empty()) {
        text = "killed by " + signal;
    } else {
        text = "exited with code " + integer_text(number_of(*exit, "code").value_or(-1));
    }
    if (auto by = text_of(*exit, "killed_by"); !by.empty()) {
        text += " (" + by + ")";
    } else if (exit->value("timed_out", false)) {
        text += " (timeout)";
    } else if (exit->value("oom_killed", false)) {
        text += " (OOM killer)";
    }
    text += " after " + seconds_words(number_of(*exit, "duration").value_or(0));
    if (auto at = number_of(*exit, "at")) {
        text += " at " + clock_text(*at);
    }
    return text;
}

std::string render_show(const ShowReplies& replies, double now, bool color) {
    const proto::json& status = replies.status;
    const proto::json facts = replies.explain.value("facts", proto::json::object());
    std::vector<std::pair<std::string, std::string>> fields{
        {"state", state_words(status, now)},
        {"run", run_words(status)},
        {"type", text_of(status, "type")},
        {"group", text_of(status, "group").empty() ? "-" : text_of(status, "group")},
        {"command", fact_or_dash(facts, "command")},
        {"cwd", fact_or_dash(facts, "cwd")},
        {"user", fact_or_dash(facts, "user")},
        {"unix group", fact_or_dash(facts, "unix_group")},
        {"after", fact_or_dash(facts, "after")},
        {"restarts", restart_words(status, facts)},
        {"last exit", last_exit_words(status)},
        {"liveness", liveness_words(status, facts)},
        {"readiness", readiness_words(status, facts)},
        {"resources", resources_words(status)},
    };
    if (auto limits = limits_words(status); !limits.empty()) {
        fields.emplace_back("limits", limits);
    }
    if (auto security = security_words(status); !security.empty()) {
        fields.emplace_back("security", security);
    }
    if (auto notified = text_of(status, "notify_status"); !notified.empty()) {
        fields.emplace_back("notify", notified);
    }
    if (status.contains("schedule") && status["schedule"].is_object()) {
        fields.emplace_back("schedule", schedule_words(status["schedule"], facts, now));
    }
    fields.emplace_back("explain", text_of(replies.explain, "text"));

    const std::string state = text_of(status, "state");
    std::string title = text_of(status, "name") + ": ";
    if (color) {
        const char* code = state == "running" || state == "done" ? "\033[32m"
                           : state == "failed"                   ? "\033[31m"
                           : state == "paused"                   ? "\033[36m"
                                                                 : "\033[33m";
        title += std::string(code) + state + "\033[0m";
    } else {
        title += state;
    }
    std::string out = title + "\n";
    std::size_t width = 0;
    for (const auto& [label, value] : fields) {
        width = std::max(width, label.size());
    }
    for (const auto& [label, value] : fields) {
        std::string head = "  " + label + ":";
        head.resize(width + 4, ' ');
        out += head + value + "\n";
    }
    const proto::json lines = replies.logs.value("lines", proto::json::array());
    out += "\n";
    if (lines.empty()) {
        out += "no output from the latest run\n";
        return out;
    }
    out += (lines.size() == 1 ? std::string("last line")
                              : "last " + std::to_string(lines.size()) + " lines") +
           " of output (run " + integer_text(number_of(replies.logs, "run").value_or(0)) + "):\n";
    for (const auto& line : lines) {
        out += "  " + clock_text(number_of(line, "at").value_or(0)) + " " + text_of(line, "text") +
               "\n";
    }
    return out;
}

}  // namespace pkit::ctl
