#include "daemon/shell/event_view.hpp"

#include <cstdio>

#include "config/values.hpp"

namespace pkit::shell {

namespace {

// "0.25s", "3s", "1m30s": short and exact enough for a log line.
std::string short_duration(core::Duration d) {
    if (d < std::chrono::seconds(10)) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.3gs", config::to_seconds(d));
        return buf;
    }
    return config::format_duration(d);
}

proto::json exit_fields(const core::ExitRecord& exit) {
    proto::json j;
    j["code"] = exit.code ? proto::json(*exit.code) : proto::json(nullptr);
    j["signal"] =
        exit.signal ? proto::json(config::signal_name(*exit.signal)) : proto::json(nullptr);
    j["duration"] = config::to_seconds(exit.duration);
    j["timed_out"] = exit.timed_out;
    j["killed_by"] = exit.killed_by == core::KilledBy::none
                         ? proto::json(nullptr)
                         : proto::json(std::string(core::to_string(exit.killed_by)));
    return j;
}

proto::ExitInfo exit_info(const core::ExitRecord& exit) {
    proto::ExitInfo info;
    info.code = exit.code;
    if (exit.signal) {
        info.signal = config::signal_name(*exit.signal);
    }
    info.duration = config::to_seconds(exit.duration);
    info.at = exit.at;
    info.timed_out = exit.timed_out;
    if (exit.killed_by != core::KilledBy::none) {
        info.killed_by = std::string(core::to_string(exit.killed_by));
    }
    return info;
}

}  // namespace

std::string describe_exit(const core::ExitRecord& exit) {
    std::string text = exit.signal ? config::signal_name(*exit.signal)
                                   : "exit " + std::to_string(exit.code.value_or(-1));
    if (exit.killed_by != core::KilledBy::none) {
        text += " (" + std::string(core::to_string(exit.killed_by)) + ")";
    }
    return text;
}

proto::json event_json(const core::Event& event) {
    std::optional<std::string> service;
    if (!event.service.empty()) {
        service = event.service;
    }
    proto::json j = proto::make_event(core::to_string(event.type), service, event.group, event.at);
    switch (event.type) {
        case core::EventType::started:
            j["pid"] = event.pid;
            j["run"] = event.run;
            break;
        case core::EventType::exited:
            j["run"] = event.run;
            if (event.exit) {
                j.update(exit_fields(*event.exit));
            } else {
                j["code"] = nullptr;
                j["signal"] = nullptr;
                j["duration"] = 0.0;
            }
            j["launch_error"] = event.launch_error ? proto::json(event.launch_error->message)
                                                   : proto::json(nullptr);
            break;
        case core::EventType::restarting:
            j["delay"] = config::to_seconds(event.delay);
            j["restart"] = event.restart;
            break;
        case core::EventType::storm_pause:
            j["pause"] = config::to_seconds(event.delay);
            break;
        case core::EventType::health:
            j["status"] = event.reason;
            break;
        case core::EventType::ready:
            j["run"] = event.run;
            break;
        case core::EventType::liveness_kill:
        case core::EventType::stopped:
        case core::EventType::gave_up:
        case core::EventType::restarts_exhausted:
        case core::EventType::group_failed:
        case core::EventType::escalated:
        case core::EventType::reload:
            break;
    }
    if (!event.reason.empty()) {
        j["reason"] = event.reason;
    }
    return j;
}

std::string event_text(const core::Event& event) {
    std::string who = event.service.empty() ? std::string("daemon") : event.service;
    std::string run = "run " + std::to_string(event.run);
    switch (event.type) {
        case core::EventType::started:
            return who + ": started (pid " + std::to_string(event.pid) + ", " + run + ")";
        case core::EventType::exited:
            if (event.launch_error) {
                return who + ": launch failed: " + event.launch_error->message + " (" + run + ")";
            }
            if (event.exit) {
                const auto& exit = *event.exit;
                std::string how =
                    exit.signal ? "killed by " + config::signal_name(*exit.signal)
                                : "exited with code " + std::to_string(exit.code.value_or(-1));
                if (exit.killed_by != core::KilledBy::none) {
                    how += " (" + std::string(core::to_string(exit.killed_by)) + ")";
                }
                return who + ": " + how + " after " + short_duration(exit.duration) + " (" + run +
                       ")";
            }
            return who + ": exited (" + run + ")";
        case core::EventType::restarting:
            return who + ": restarting in " + short_duration(event.delay) + " (restart " +
                   std::to_string(event.restart) + ")";
        case core::EventType::storm_pause:
            return who + ": failure storm: restarts paused for " + short_duration(event.delay);
        case core::EventType::stopped:
            return who + ": stopped" + (event.reason.empty() ? "" : ": " + event.reason);
        case core::EventType::gave_up:
            return who + ": supervision ended: " + event.reason;
        case core::EventType::restarts_exhausted:
            return who + ": restarts exhausted: " + event.reason;
        case core::EventType::ready:
            return who + ": ready (" + run + ")";
        case core::EventType::liveness_kill:
            return who + ": liveness check failed; stopping the run (" + run + ")";
        case core::EventType::health:
            return who + ": health " + event.reason;
        case core::EventType::group_failed:
            return "group " + event.group.value_or("?") + " failed" +
                   (event.reason.empty() ? "" : ": " + event.reason);
        case core::EventType::escalated:
            return "escalated: " + event.reason;
        case core::EventType::reload:
            return "reloaded: " + event.reason;
    }
    return who + ": event";
}

proto::ServiceStatus service_status(const core::Service& s, core::Now now) {
    proto::ServiceStatus st;
    st.name = s.name();
    st.state = std::string(core::to_string(s.state()));
    st.group = s.group();
    if (s.has_process()) {
        st.pid = s.pid();
    }
    st.run = static_cast<int>(s.run());
    if (s.run() > 0) {
        st.started_at = s.started_wall();
    }
    if (s.has_process() && s.started_at()) {
        st.uptime = config::to_seconds(now.mono - *s.started_at());
    }
    st.ready = s.ready();
    st.restarts = s.restarts();
    st.storm_pauses = s.storm_pauses();
    st.liveness_kills = s.liveness_kills();
    if (s.stopped_reason() && !s.desired_up()) {
        st.stopped = std::string(core::to_string(*s.stopped_reason()));
    }
    if (s.restart_at()) {
        st.next_restart_in = std::max(0.0, config::to_seconds(*s.restart_at() - now.mono));
    }
    if (s.last_exit()) {
        st.last_exit = exit_info(*s.last_exit());
    }
    st.last_launch_error = s.last_launch_error();
    if (auto health = s.health()) {
        st.health = proto::HealthInfo{std::string(core::to_string(*health)), s.health_failures()};
    }
    st.notify_status = s.notify_status();
    st.type = std::string(config::to_string(s.spec().type));
    st.stop_timeout = config::to_seconds(s.spec().stop.timeout);
    if (s.spec().ready.enabled()) {
        st.ready_timeout = config::to_seconds(s.spec().ready.timeout);
    }
    return st;
}

}  // namespace pkit::shell
