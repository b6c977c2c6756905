#include "daemon/shell/views/event_view.hpp"

#include <cstdio>

#include "config/values.hpp"
#include "daemon/shell/launch/sandbox_plan.hpp"

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

proto::ExitInfo exit_info(const core::ExitRecord& exit) {
    proto::ExitInfo info;
    info.code = exit.code;
    if (exit.signal) {
        info.signal = config::signal_name(*exit.signal);
    }
    info.duration = config::to_seconds(exit.duration);
    info.at = exit.at;
    info.timed_out = exit.timed_out;
    info.oom_killed = exit.oom_killed;
    if (exit.killed_by != core::KilledBy::none) {
        info.killed_by = std::string(core::to_string(exit.killed_by));
    }
    return info;
}

}  // namespace

proto::json event_json(const core::Event& event) {
    proto::Event e;
    e.type = std::string(core::to_string(event.type));
    if (!event.service.empty()) {
        e.service = event.service;
    }
    e.group = event.group;
    e.at = event.at;
    switch (event.type) {
        case core::EventType::started:
            e.pid = event.pid;
            e.run = event.run;
            break;
        case core::EventType::exited:
            e.run = event.run;
            e.exited = proto::ExitedFields{};
            if (event.exit) {
                e.exited->exit = exit_info(*event.exit);
            }
            if (event.launch_error) {
                e.exited->launch_error = event.launch_error->message;
            }
            break;
        case core::EventType::restarting:
            e.delay = config::to_seconds(event.delay);
            e.restart = event.restart;
            break;
        case core::EventType::storm_pause:
            e.pause = config::to_seconds(event.delay);
            break;
        case core::EventType::health:
            e.status = event.reason;
            break;
        case core::EventType::ready:
        case core::EventType::paused:
        case core::EventType::resumed:
            e.run = event.run;
            break;
        case core::EventType::liveness_kill:
        case core::EventType::stopped:
        case core::EventType::gave_up:
        case core::EventType::restarts_exhausted:
        case core::EventType::group_failed:
        case core::EventType::escalated:
        case core::EventType::reload:
        case core::EventType::missed:
        case core::EventType::log_error:
            break;
    }
    if (!event.reason.empty()) {
        e.reason = event.reason;
    }
    return proto::json(e);
}

EndFacts end_facts(const core::Service& service) {
    EndFacts facts;
    facts.state = service.state();
    if (facts.state == core::State::scheduled && service.schedule().last_result) {
        facts.state = *service.schedule().last_result;  // the episode that just ended
    }
    facts.reason = service.stopped_reason();
    facts.last_exit = service.last_exit();
    facts.stop_signal = service.spec().stop.signal;
    facts.max_restarts = service.spec().restart.max_restarts;
    facts.within = service.spec().restart.within;
    facts.memory_max = service.spec().resources->memory_max;
    return facts;
}

namespace {

// What an OOM kill adds to the words of an exit: the whole of them when the main process
// was the one killed, else a clause after them; nothing without one.
std::string with_oom(std::string words, const core::ExitRecord& exit,
                     const std::optional<std::uint64_t>& memory_max) {
    if (!exit.oom_killed) {
        return words;
    }
    if (exit.killed_by == core::KilledBy::none && exit.signal == SIGKILL) {
        return core::oom_words(memory_max);
    }
    words += "; a process of the run was ";
    words += core::oom_words(memory_max);
    return words;
}

}  // namespace

std::string exit_words(const core::ExitRecord& exit, int stop_signal,
                       const std::optional<std::uint64_t>& memory_max) {
    return with_oom(exit_words(exit, stop_signal), exit, memory_max);
}

std::string exit_words(const core::ExitRecord& exit, int stop_signal) {
    if (exit.killed_by == core::KilledBy::none) {
        return exit.signal ? "killed by " + config::signal_name(*exit.signal)
                           : "exit " + std::to_string(exit.code.value_or(-1));
    }
    const std::string stop = config::signal_name(stop_signal);
    std::string text;
    if (!exit.signal) {
        text = "exit " + std::to_string(exit.code.value_or(-1)) + " after " + stop;
    } else if (*exit.signal == stop_signal) {
        text = "ended by " + stop;
    } else if (*exit.signal == SIGKILL) {
        text = exit.shutdown_kill ? "killed by SIGKILL at the shutdown deadline"
                                  : "killed by SIGKILL after the stop timeout";
    } else {
        text = "killed by " + config::signal_name(*exit.signal);
    }
    switch (exit.killed_by) {
        case core::KilledBy::timeout:
            return text + " (timed out)";
        case core::KilledBy::liveness:
            return text + " (liveness check failed)";
        case core::KilledBy::ready_timeout:
            return text + " (not ready in time)";
        case core::KilledBy::memory:
            return text + " (over memory_max)";
        case core::KilledBy::operator_:
        case core::KilledBy::none:
            break;
    }
    return text;
}

namespace {

// "migrate: done (exit 0)", "web: stopped on request (exit 0 after SIGTERM)", "job: failed:
// stop_when: exit 3 matched stop_when.exit_codes": why supervision of a service ended.
std::string end_text(const std::string& who, const core::Event& event, const EndFacts& facts) {
    const std::string exit =
        facts.last_exit
            ? " (" + exit_words(*facts.last_exit, facts.stop_signal, facts.memory_max) + ")"
            : "";
    switch (event.type) {
        case core::EventType::restarts_exhausted: {
            std::string used =
                std::to_string(facts.max_restarts) + " of " + std::to_string(facts.max_restarts);
            if (facts.within > core::Duration::zero()) {
                used += " in " + config::format_duration(facts.within);
            }
            return who + ": failed: restarts exhausted (" + used + ")";
        }
        case core::EventType::gave_up:
            return who + ": failed: " + event.reason;
        default:
            break;
    }
    switch (facts.state) {
        case core::State::stopped: {
            // The exit belongs to this stop only when pkitd stopped that run on request.
            const bool ours =
                facts.last_exit && facts.last_exit->killed_by == core::KilledBy::operator_;
            return who + ": stopped on request" + (ours ? exit : "");
        }
        case core::State::done:
        case core::State::failed: {
            const std::string state = facts.state == core::State::done ? "done" : "failed";
            switch (facts.reason.value_or(core::StopReason::policy_satisfied)) {
                case core::StopReason::unhealthy:
                    if (facts.last_exit && facts.last_exit->killed_by == core::KilledBy::memory) {
                        return who + ": " + state + ": stopped over memory_max";
                    }
                    return who + ": " + state + ": killed by its liveness check";
                case core::StopReason::predicate:
                case core::StopReason::gave_up:
                case core::StopReason::restarts_exhausted:
                    // The reason names what matched, the exit included.
                    return who + ": " + state + ": " + event.reason;
                case core::StopReason::policy_satisfied:
                case core::StopReason::operator_:
                    break;
            }
            return who + ": " + state + exit;
        }
        default:
            return who + ": stopped" + (event.reason.empty() ? "" : ": " + event.reason);
    }
}

}  // namespace

std::string event_text(const core::Event& event, const EndFacts* facts) {
    std::string who = event.service.empty() ? std::string("daemon") : event.service;
    std::string run = "run " + std::to_string(event.run);
    switch (event.type) {
        case core::EventType::started:
            return who + ": started (pid " + std::to_string(event.pid) + ", " + run + ")";
        case core::EventType::exited:
            if (event.launch_error) {
                return who + ": launch failed: " + event.launch_error->message + " (" + run + ")";
            }
            if (event.exit && !event.reason.empty()) {
                // A start_first replacement's new run failed: its reason says what runs on.
                core::Event plain = event;
                plain.reason.clear();
                return event_text(plain, facts) + "; " + event.reason;
            }
            if (event.exit) {
                const auto& exit = *event.exit;
                const std::optional<std::uint64_t> memory_max =
                    facts ? facts->memory_max : std::nullopt;
                if (exit.killed_by == core::KilledBy::none) {
                    const bool oom_main = exit.oom_killed && exit.signal == SIGKILL;
                    std::string how =
                        oom_main ? core::oom_words(memory_max)
                        : exit.signal
                            ? "killed by " + config::signal_name(*exit.signal)
                            : "exited with code " + std::to_string(exit.code.value_or(-1));
                    how += " after ";
                    how += short_duration(exit.duration);
                    if (exit.oom_killed && !oom_main) {
                        how += "; a process of the run was ";
                        how += core::oom_words(memory_max);
                    }
                    return who + ": " + how + " (" + run + ")";
                }
                // pkitd ended this run: say how it went and after which signal.
                return who + ": " +
                       exit_words(exit, facts ? facts->stop_signal : SIGTERM, memory_max) + " (" +
                       run + ", " + short_duration(exit.duration) + ")";
            }
            return who + ": exited (" + run + ")";
        case core::EventType::restarting:
            return who + ": restarting in " + short_duration(event.delay) + " (restart " +
                   std::to_string(event.restart) + ")";
        case core::EventType::storm_pause:
            return who + ": failure storm: restarts paused for " + short_duration(event.delay);
        case core::EventType::stopped:
        case core::EventType::gave_up:
        case core::EventType::restarts_exhausted:
            if (facts) {
                return end_text(who, event, *facts);
            }
            return who + ": stopped" + (event.reason.empty() ? "" : ": " + event.reason);
        case core::EventType::ready:
            if (!event.reason.empty()) {
                return who + ": " + run + " ready, " + event.reason;  // start_first
            }
            return who + ": ready (" + run + ")";
        case core::EventType::liveness_kill:
            if (event.reason.starts_with("over memory_max")) {  // SPEC §20
                return who + ": " + event.reason + ": stopping (" + run + ")";
            }
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
        case core::EventType::missed:
            return who + ": tick missed: " + event.reason;
        case core::EventType::paused:
            return who + ": paused by the operator (" + run + ", pid " + std::to_string(event.pid) +
                   " frozen)";
        case core::EventType::resumed:
            return who + ": resumed (" + run + ")" +
                   (event.reason.empty() ? "" : " " + event.reason);
        case core::EventType::log_error:
            return event.reason;  // "web: log file PATH: WHY; lines are dropped"
    }
    return who + ": event";
}

namespace {

proto::ScheduleInfo schedule_info(const core::Service& s) {
    const core::ScheduleRecord& r = s.schedule();
    proto::ScheduleInfo info;
    info.expression = s.spec().schedule->expression;
    if (r.armed && r.tick) {
        info.next = r.tick_wall;
    }
    info.last_started = r.last_started;
    if (r.last_result) {
        info.last_result = std::string(core::to_string(*r.last_result));
    }
    info.missed = static_cast<std::int64_t>(r.missed);
    return info;
}

}  // namespace

proto::ServiceStatus service_status(const core::Service& s, core::Now now) {
    proto::ServiceStatus st;
    st.name = s.name();
    st.state = std::string(core::to_string(s.state()));
    st.group = s.group();
    if (s.pid() != 0) {
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
    // Null while supervised (SPEC §5): a scheduled job between episodes is, by its
    // schedule; how its last episode ended is in schedule.last_result.
    if (s.stopped_reason() && !s.desired_up() && s.state() != core::State::scheduled) {
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
    if (s.spec().ready->enabled()) {
        st.ready_timeout = config::to_seconds(s.spec().ready->timeout);
    }
    if (s.draining_pid() != 0) {
        st.draining_pid = s.draining_pid();
    }
    if (s.has_schedule()) {
        st.schedule = schedule_info(s);
    }
    if (s.spec().security->any()) {
        st.security = sandbox_words(*s.spec().security);
    }
    return st;
}

}  // namespace pkit::shell
