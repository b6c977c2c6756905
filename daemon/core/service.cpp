#include "daemon/core/service.hpp"

#include <sys/wait.h>

#include <algorithm>
#include <csignal>

namespace pkit::core {

namespace {

template <class T>
std::optional<T> earliest(std::optional<T> a, std::optional<T> b) {
    if (!a) {
        return b;
    }
    if (!b) {
        return a;
    }
    return std::min(*a, *b);
}

bool is_clean(const config::ServiceSpec& spec, const ExitRecord& exit) {
    if (!exit.code || exit.killed_by != KilledBy::none) {
        return false;
    }
    const auto& codes = spec.success_codes;
    return std::find(codes.begin(), codes.end(), *exit.code) != codes.end();
}

}  // namespace

Service::Service(config::ServiceSpec spec, std::size_t index, std::optional<std::string> group)
    : m_spec(std::move(spec)), m_index(index), m_group(std::move(group)) {
    m_stopped = StopReason::operator_;
}

Event Service::event(EventType type, Now now) const {
    Event e;
    e.type = type;
    e.service = m_spec.name;
    e.group = m_group;
    e.at = now.wall;
    e.run = m_run;
    e.pid = m_pid;
    return e;
}

void Service::emit(Actions& out, Event e) const {
    out.push_back(EmitAction{std::move(e)});
}

void Service::reset_counters() {
    m_restarts = 0;
    m_storm_pauses = 0;
    m_liveness_kills = 0;
    m_crashes_at_reset = m_crashes;
    m_policy = PolicyState{};
    m_decision = Decision{};
}

void Service::want_up(Now now, Actions& out, bool fresh) {
    (void)now;
    (void)out;
    m_desired_up = true;
    switch (m_state) {
        case State::stopped:
        case State::done:
        case State::failed:
            if (fresh) {
                reset_counters();
            }
            m_stopped.reset();
            m_state = State::waiting;
            break;
        case State::backoff:
        case State::storm_pause:
            // The operator asked: skip the rest of the wait.
            m_restart_at.reset();
            m_restart_pending = false;
            m_state = State::waiting;
            break;
        case State::stopping:
            m_after_stop = AfterStop::relaunch;
            break;
        case State::waiting:
        case State::starting:
        case State::running:
            break;
    }
}

void Service::launch(Now now, Actions& out) {
    if (m_state != State::waiting) {
        return;
    }
    ++m_run;
    m_restart_pending = false;
    m_held_by_daemon = false;
    rotate_tails();
    m_state = State::starting;
    m_ready = false;
    m_killing = KilledBy::none;
    m_started = now.mono;
    m_started_wall = now.wall;
    m_restart_at.reset();
    m_kill_at.reset();
    m_timeout_at.reset();
    clear_probes();
    out.push_back(SpawnAction{m_index, m_run});
}

void Service::rotate_tails() {
    m_previous_tail = std::move(m_tail);
    m_previous_tail_run = m_tail_run;
    m_tail = OutputTail(m_spec.output.max_lines, m_spec.output.max_bytes);
    m_tail_run = m_run;
    m_output_matches = OutputMatches{};
    m_match_output = m_spec.stop_when.output_matches || m_spec.give_up_when.output_matches;
}

void Service::on_spawned(std::uint64_t run, pid_t pid, Now now, Actions& out) {
    if (run != m_run || m_state != State::starting) {
        return;
    }
    m_pid = pid;
    m_last_launch_error.reset();
    if (m_spec.timeout > Duration::zero()) {
        m_timeout_at = now.mono + m_spec.timeout;
    }
    // The run started when it was launched, as status `started_at` and the exit's
    // `duration` count it; the exec's confirmation may come later (under load, much).
    Event started = event(EventType::started, now);
    started.at = m_started_wall;
    emit(out, std::move(started));
    m_health = HealthStatus::unknown;
    m_health_failures = 0;
    m_notify_status.reset();
    if (m_spec.type == config::ServiceType::oneshot) {
        // A job runs, but is not ready until it has ended cleanly (state done): its
        // dependents wait for it to finish (SPEC §2 `type`).
        m_state = State::running;
        start_liveness(now);
        return;
    }
    if (!m_spec.ready.enabled()) {
        // Without [ready], a run is ready as soon as its exec succeeded.
        m_ready = true;
        m_state = State::running;
        start_liveness(now);
        return;
    }
    m_ready_deadline = now.mono + m_spec.ready.timeout;
    if (m_spec.ready.probe.enabled()) {
        m_next_ready_probe = now.mono + m_spec.ready.probe.interval;
    }
}

void Service::become_ready(Now now, Actions& out) {
    m_ready = true;
    m_ready_deadline.reset();
    m_next_ready_probe.reset();
    if (m_state == State::starting) {
        m_state = State::running;
    }
    emit(out, event(EventType::ready, now));
    start_liveness(now);
}

// The first liveness probe runs one interval after the run is ready.
void Service::start_liveness(Now now) {
    const config::ProbeSpec& health = m_spec.health;
    if (health.kind == config::ProbeKind::watchdog) {
        m_watchdog_deadline = now.mono + health.watchdog;
    } else if (health.enabled()) {
        m_next_health_probe = now.mono + health.interval;
    }
}

void Service::clear_probes() {
    m_ready_deadline.reset();
    m_next_ready_probe.reset();
    m_next_health_probe.reset();
    m_watchdog_deadline.reset();
}

void Service::on_probe_result(std::uint64_t run, ProbePurpose purpose, bool ok, Now now,
                              Actions& out) {
    if (run != m_run || m_pid == 0) {
        return;
    }
    if (purpose == ProbePurpose::ready) {
        if (m_state != State::starting || m_ready) {
            return;
        }
        if (ok) {
            become_ready(now, out);
        } else {
            m_next_ready_probe = now.mono + m_spec.ready.probe.interval;
        }
        return;
    }
    if (m_state != State::running) {
        return;
    }
    health_result(ok, now, out);
    if (m_state == State::running) {
        m_next_health_probe = now.mono + m_spec.health.interval;
    }
}

// One liveness result: a success resets the streak; `failures` failures in a row
// force-stop the run, which then counts as a crash (SPEC §3).
void Service::health_result(bool ok, Now now, Actions& out) {
    HealthStatus before = m_health;
    if (ok) {
        m_health_failures = 0;
        m_health = HealthStatus::healthy;
    } else {
        ++m_health_failures;
        m_health = HealthStatus::unhealthy;
    }
    if (m_health != before) {
        Event e = event(EventType::health, now);
        e.reason = std::string(to_string(m_health));
        emit(out, std::move(e));
    }
    if (!ok && m_health_failures >= m_spec.health.failures) {
        ++m_liveness_kills;
        Event e = event(EventType::liveness_kill, now);
        e.reason = std::to_string(m_health_failures) + " failed probes in a row";
        emit(out, std::move(e));
        clear_probes();
        begin_stop(now, out, KilledBy::liveness, std::nullopt);
    }
}

void Service::on_notify(std::uint64_t run, const NotifyMessage& message, Now now, Actions& out) {
    if (run != m_run || m_pid == 0) {
        return;
    }
    if (message.status) {
        m_notify_status = message.status;
    }
    if (message.extend_timeout_usec && m_state == State::starting && m_ready_deadline) {
        m_ready_deadline = now.mono + std::chrono::microseconds(*message.extend_timeout_usec);
    }
    if (message.ready && m_state == State::starting && !m_ready && m_spec.ready.notify) {
        become_ready(now, out);
    }
    if (message.watchdog && m_state == State::running &&
        m_spec.health.kind == config::ProbeKind::watchdog) {
        m_watchdog_deadline = now.mono + m_spec.health.watchdog;
        health_result(true, now, out);
    }
}

void Service::on_launch_failed(std::uint64_t run, const LaunchFailure& failure, Now now,
                               Actions& out, double u01) {
    if (run != m_run || m_state != State::starting) {
        return;
    }
    m_last_launch_error = failure.message;
    m_match_output = false;
    Event e = event(EventType::exited, now);
    e.pid = 0;
    e.launch_error = failure;
    emit(out, std::move(e));
    RunResult result;
    result.launch_error = failure;
    result.clean = false;
    complete_run(result, now, out, u01);
}

void Service::on_exit(std::uint64_t run, int wait_status, Now now, Actions& out, double u01) {
    if (run != m_run || m_pid == 0) {
        return;  // a stale exit: that run was already replaced
    }
    ExitRecord exit;
    if (WIFEXITED(wait_status)) {
        exit.code = WEXITSTATUS(wait_status);
    } else if (WIFSIGNALED(wait_status)) {
        exit.signal = WTERMSIG(wait_status);
    }
    exit.duration = m_started ? now.mono - *m_started : Duration::zero();
    exit.at = now.wall;
    exit.killed_by = m_killing;
    exit.timed_out = m_killing == KilledBy::timeout;
    m_last_exit = exit;
    m_match_output = false;  // later lines are leftovers': the run is judged now

    Event e = event(EventType::exited, now);
    e.exit = exit;
    emit(out, std::move(e));

    const pid_t pgid = m_pid;
    m_pid = 0;
    m_ready = false;
    m_timeout_at.reset();
    m_kill_at.reset();
    clear_probes();
    if (m_spec.stop.mode == config::StopMode::group) {
        // What remains of the run's process group is stopped too (SPEC §3).
        out.push_back(CleanupGroupAction{m_index, pgid, m_spec.stop.signal, m_spec.stop.timeout});
    }

    if ((m_state == State::stopping && m_killing == KilledBy::operator_) || m_no_restarts) {
        // Stopped on request: never a crash, no gates.
        if (m_after_stop == AfterStop::relaunch && m_desired_up) {
            m_state = State::waiting;
        } else {
            m_state = State::stopped;
            m_stopped = StopReason::operator_;
            Event s = event(EventType::stopped, now);
            s.reason = "stopped on request";
            emit(out, std::move(s));
        }
        return;
    }
    RunResult result;
    result.code = exit.code;
    result.signal = exit.signal;
    result.killed_by = exit.killed_by;
    result.duration = exit.duration;
    result.clean = is_clean(m_spec, exit);
    result.output = std::move(m_output_matches);
    m_output_matches = OutputMatches{};
    complete_run(result, now, out, u01);
}

void Service::complete_run(const RunResult& result, Now now, Actions& out, double u01) {
    m_pid = 0;
    if (!result.clean) {
        ++m_crashes;
    }
    m_decision = decide(m_spec, result, m_policy, now.mono, u01);
    if (!m_decision.restart) {
        enter_ended(m_decision.reason, result.clean, m_decision.why, now, out);
        return;
    }
    ++m_restarts;
    m_restart_pending = true;
    m_restart_at = now.mono + m_decision.delay;
    if (m_decision.storm_tripped) {
        ++m_storm_pauses;
        m_state = State::storm_pause;
        Event e = event(EventType::storm_pause, now);
        e.delay = m_decision.delay;
        emit(out, std::move(e));
    } else {
        m_state = State::backoff;
    }
    Event e = event(EventType::restarting, now);
    e.delay = m_decision.delay;
    e.restart = m_restarts;
    emit(out, std::move(e));
    if (m_decision.delay <= Duration::zero()) {
        m_restart_at.reset();
        m_state = State::waiting;
    }
}

void Service::enter_ended(StopReason reason, bool clean, const std::string& why, Now now,
                          Actions& out) {
    m_state = clean ? State::done : State::failed;
    m_stopped = reason;
    m_desired_up = false;
    m_restart_at.reset();
    EventType type = EventType::stopped;
    if (reason == StopReason::gave_up) {
        type = EventType::gave_up;
    } else if (reason == StopReason::restarts_exhausted) {
        type = EventType::restarts_exhausted;
    }
    Event e = event(type, now);
    e.reason = why;
    emit(out, std::move(e));
}

void Service::on_time(Now now, Actions& out) {
    if (m_kill_at && now.mono >= *m_kill_at) {
        m_kill_at.reset();
        kill_now(out);
    }
    if (m_timeout_at && now.mono >= *m_timeout_at) {
        m_timeout_at.reset();
        begin_stop(now, out, KilledBy::timeout, std::nullopt);
    }
    if (m_ready_deadline && now.mono >= *m_ready_deadline) {
        m_ready_deadline.reset();
        m_next_ready_probe.reset();
        if (m_state == State::starting) {
            begin_stop(now, out, KilledBy::ready_timeout, std::nullopt);
        }
    }
    if (m_next_ready_probe && now.mono >= *m_next_ready_probe) {
        m_next_ready_probe.reset();  // re-armed by the result
        out.push_back(ProbeAction{m_index, m_run, ProbePurpose::ready});
    }
    if (m_next_health_probe && now.mono >= *m_next_health_probe) {
        m_next_health_probe.reset();  // re-armed by the result
        out.push_back(ProbeAction{m_index, m_run, ProbePurpose::health});
    }
    if (m_watchdog_deadline && now.mono >= *m_watchdog_deadline) {
        // Each period without WATCHDOG=1 counts as one failed probe.
        m_watchdog_deadline = now.mono + m_spec.health.watchdog;
        health_result(false, now, out);
    }
    if (m_restart_at && now.mono >= *m_restart_at) {
        m_restart_at.reset();
        if (m_state == State::backoff || m_state == State::storm_pause) {
            m_state = State::waiting;
        }
    }
}

void Service::begin_stop(Now now, Actions& out, KilledBy by, std::optional<TimePoint> deadline) {
    if (m_pid == 0) {
        return;
    }
    if (m_state != State::stopping) {
        m_killing = by;
        m_state = State::stopping;
        m_timeout_at.reset();
        clear_probes();
        bool group = m_spec.stop.mode == config::StopMode::group;
        out.push_back(SignalAction{m_index, m_run, m_pid, m_spec.stop.signal, group, true});
        m_kill_at = now.mono + m_spec.stop.timeout;
    } else if (by == KilledBy::operator_ && m_killing != KilledBy::operator_) {
        // A timeout kill already under way becomes an operator stop: no crash follows.
        m_killing = KilledBy::operator_;
    }
    if (deadline) {
        m_kill_at = earliest(m_kill_at, deadline);
    }
}

void Service::stop(Now now, Actions& out, AfterStop after, std::optional<TimePoint> deadline) {
    m_after_stop = after;
    m_desired_up = after == AfterStop::relaunch;
    switch (m_state) {
        case State::starting:
        case State::running:
        case State::stopping:
            begin_stop(now, out, KilledBy::operator_, deadline);
            break;
        case State::waiting:
        case State::backoff:
        case State::storm_pause:
            m_restart_at.reset();
            if (after == AfterStop::relaunch) {
                m_state = State::waiting;
                break;
            }
            m_state = State::stopped;
            m_stopped = StopReason::operator_;
            {
                Event e = event(EventType::stopped, now);
                e.reason = "stopped on request";
                emit(out, std::move(e));
            }
            break;
        case State::stopped:
        case State::done:
        case State::failed:
            if (after == AfterStop::relaunch) {
                want_up(now, out, true);
            }
            break;
    }
}

bool Service::restart_by_group(Now now, Actions& out) {
    if (m_pid == 0 || m_state == State::stopping) {
        return false;
    }
    ++m_restarts;
    stop(now, out, AfterStop::relaunch, std::nullopt);
    return true;
}

void Service::restart_by_root(Now now, Actions& out) {
    ++m_restarts;
    m_policy = PolicyState{};
    m_decision = Decision{};
    m_desired_up = true;
    m_stopped.reset();
    m_restart_pending = false;
    m_restart_at.reset();
    if (m_pid == 0) {
        m_state = State::waiting;
    } else {
        stop(now, out, AfterStop::relaunch, std::nullopt);
    }
}

void Service::replace_spec(config::ServiceSpec spec, std::optional<std::string> group) {
    m_spec = std::move(spec);
    m_group = std::move(group);
    reset_counters();
    m_restart_pending = false;
    m_held_by_daemon = false;
    m_restart_at.reset();
}

void Service::hold_until(TimePoint until) {
    bool waiting_to_restart =
        m_state == State::waiting || m_state == State::backoff || m_state == State::storm_pause;
    if (!m_restart_pending || !waiting_to_restart || !m_desired_up) {
        return;
    }
    if (!m_restart_at || *m_restart_at < until) {
        m_restart_at = until;
        m_held_by_daemon = true;
    }
    m_state = State::storm_pause;
}

void Service::kill_now(Actions& out) {
    if (m_pid == 0) {
        return;
    }
    if (m_state != State::stopping) {
        // The shutdown deadline came before this run was asked to stop: pkitd ends it,
        // so its exit is no crash (SPEC §3) and it is not restarted.
        m_state = State::stopping;
        m_killing = KilledBy::operator_;
        m_after_stop = AfterStop::shutdown;
        m_desired_up = false;
        m_timeout_at.reset();
    }
    m_kill_at.reset();  // sent now: the escalation must not send it a second time
    bool group = m_spec.stop.mode == config::StopMode::group;
    out.push_back(SignalAction{m_index, m_run, m_pid, SIGKILL, group, false});
}

void Service::record_output(std::uint64_t run, Stream stream, std::string_view text, double wall) {
    if (m_tail_run && run == *m_tail_run) {
        m_tail.append(stream, text, wall);
        if (m_match_output && run == m_run) {
            match_output_line(m_spec, text, m_output_matches);
        }
    } else if (m_previous_tail_run && run == *m_previous_tail_run) {
        m_previous_tail.append(stream, text, wall);
    }
}

std::optional<TimePoint> Service::next_deadline() const {
    auto next = earliest(earliest(m_kill_at, m_timeout_at), m_restart_at);
    next = earliest(next, earliest(m_ready_deadline, m_next_ready_probe));
    return earliest(next, earliest(m_next_health_probe, m_watchdog_deadline));
}

}  // namespace pkit::core
