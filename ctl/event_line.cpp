#include "ctl/event_line.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <optional>

#include "config/suggest.hpp"
#include "ctl/global_options.hpp"
#include "ctl/json_fields.hpp"
#include "ctl/status_filter.hpp"
#include "ctl/time_text.hpp"

namespace pkit::ctl {
namespace {

// " (run 4)" when the event carries its run.
std::string run_suffix(const proto::json& event) {
    auto run = number_of(event, "run");
    return run ? " (run " + integer_text(*run) + ")" : "";
}

// ": REASON" when the event carries a reason.
std::string reason_suffix(const proto::json& event) {
    auto reason = text_of(event, "reason");
    return reason.empty() ? "" : ": " + reason;
}

std::string exited_words(const proto::json& event) {
    if (auto error = text_of(event, "launch_error"); !error.empty()) {
        return "launch failed: " + error + run_suffix(event);
    }
    std::string words = "exited";
    if (auto signal = text_of(event, "signal"); !signal.empty()) {
        words = "killed by " + signal;
    } else if (auto code = number_of(event, "code")) {
        words += " code " + integer_text(*code);
    }
    if (auto by = text_of(event, "killed_by"); !by.empty()) {
        words += " (" + by + ")";
    } else if (event.value("timed_out", false)) {
        words += " (timeout)";
    } else if (event.value("oom_killed", false)) {
        words += " (OOM killer)";
    }
    if (auto duration = number_of(event, "duration")) {
        words += " after " + seconds_words(*duration);
    }
    return words + run_suffix(event);
}

// An event type this pkitctl does not know: its name and its other non-null fields.
std::string generic_words(const proto::json& event) {
    std::string words = text_of(event, "type");
    for (const auto& [key, value] : event.items()) {
        if (key == "type" || key == "service" || key == "group" || key == "at" || value.is_null()) {
            continue;
        }
        words += " " + key + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
    }
    return words;
}

}  // namespace

const std::vector<std::string>& event_types() {
    static const std::vector<std::string> types{
        "started",       "ready",     "exited",  "restarting", "storm_pause",
        "liveness_kill", "health",    "stopped", "gave_up",    "restarts_exhausted",
        "group_failed",  "escalated", "reload",  "missed",     "paused",
        "resumed",       "log_error"};
    return types;
}

bool EventFilter::matches(const proto::json& event) const {
    // NAME also matches its instances NAME@I (SPEC §13).
    auto service = text_of(event, "service");
    auto base = service.substr(0, service.find('@'));
    auto selects = [&](const std::string& wanted) {
        return is_pattern(wanted) ? ::fnmatch(wanted.c_str(), service.c_str(), 0) == 0
                                  : wanted == service || wanted == base;
    };
    if (!services.empty() && std::ranges::none_of(services, selects)) {
        return false;
    }
    return types.empty() || std::ranges::find(types, text_of(event, "type")) != types.end();
}

void EventFilter::check_services(const std::vector<std::string>& known) const {
    for (const auto& wanted : services) {
        const bool found = std::ranges::any_of(known, [&](const std::string& name) {
            return is_pattern(wanted) ? ::fnmatch(wanted.c_str(), name.c_str(), 0) == 0
                                      : name == wanted || name.substr(0, name.find('@')) == wanted;
        });
        if (found) {
            continue;
        }
        if (is_pattern(wanted)) {
            throw CtlError(k_exit_daemon_error,
                           "unknown_service: no service matches \"" + wanted + "\"");
        }
        throw CtlError(k_exit_daemon_error, "unknown_service: unknown service \"" + wanted + "\"" +
                                                config::detail::did_you_mean(wanted, known));
    }
}

std::string event_subject(const proto::json& event) {
    if (auto service = text_of(event, "service"); !service.empty()) {
        return service;
    }
    if (auto group = text_of(event, "group"); !group.empty()) {
        return group + "/";
    }
    return "pkitd";
}

std::string event_words(const proto::json& event) {
    const std::string type = text_of(event, "type");
    if (type == "started") {
        auto pid = number_of(event, "pid");
        return "started" + (pid ? " pid " + integer_text(*pid) : "") + run_suffix(event);
    }
    if (type == "ready") {
        return "ready" + run_suffix(event);
    }
    if (type == "exited") {
        return exited_words(event);
    }
    if (type == "restarting") {
        auto delay = number_of(event, "delay");
        auto restart = number_of(event, "restart");
        return "restarting" + (delay ? " in " + seconds_words(*delay) : "") +
               (restart ? " (restart " + integer_text(*restart) + ")" : "");
    }
    if (type == "storm_pause") {
        auto pause = number_of(event, "pause");
        return "storm pause" + (pause ? ": restarts wait " + seconds_words(*pause) : "") +
               reason_suffix(event);
    }
    if (type == "paused") {
        return "paused by the operator" + run_suffix(event);
    }
    if (type == "resumed") {
        return "resumed" + reason_suffix(event) + run_suffix(event);
    }
    if (type == "liveness_kill") {
        return "liveness kill" + reason_suffix(event) + run_suffix(event);
    }
    if (type == "health") {
        auto status = text_of(event, "status");
        return "health " + (status.empty() ? text_of(event, "reason") : status);
    }
    if (type == "log_error") {
        // "web: log file PATH: WHY; lines are dropped": the subject column names web.
        std::string reason = text_of(event, "reason");
        std::string head = text_of(event, "service") + ": ";
        if (reason.starts_with(head)) {
            reason.erase(0, head.size());
        }
        return reason.empty() ? "log error" : "log error: " + reason;
    }
    if (type == "stopped" || type == "gave_up" || type == "restarts_exhausted" ||
        type == "group_failed" || type == "escalated" || type == "reload" || type == "missed") {
        std::string words = type;
        std::ranges::replace(words, '_', ' ');  // "gave up", "restarts exhausted"
        if (type == "group_failed") {
            words = "failed";  // the subject column says "GROUP/"
        }
        // A reason that already begins with the words ("gave up: exit 78 matched ...")
        // is not repeated after them.
        if (auto reason = text_of(event, "reason"); reason.starts_with(words)) {
            return reason;
        }
        return words + reason_suffix(event);
    }
    return generic_words(event);
}

std::string event_line(const proto::json& event, std::size_t subject_width) {
    std::string subject = event_subject(event);
    subject.resize(std::max(subject.size(), subject_width), ' ');
    return clock_text(number_of(event, "at").value_or(0.0)) + " " + subject + " " +
           event_words(event);
}

}  // namespace pkit::ctl
