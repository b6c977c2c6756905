// Service: a run's life from want_up to its end and the gates (the table's want_up,
// launch, spawned, launch failed and exit rows). Stops and restarts are in
// service_stop.cpp, deadlines, probes and notify in service_deadlines.cpp.

#include <algorithm>

#include "daemon/core/service.hpp"

namespace pkit::core {

namespace {

bool is_clean(const config::ServiceSpec& spec, const ExitRecord& exit) {
    if (!exit.code || exit.killed_by != KilledBy::none) {
        return false;
    }
    return spec.success_codes.contains(*exit.code);
}

// How a new run ended, for a failed replacement's error ("exited with code 1").
std::string ended_words(const ExitRecord& exit) {
    switch (exit.killed_by) {
        case KilledBy::ready_timeout:
            return "was not ready within its [ready] timeout";
        case KilledBy::timeout:
            return "timed out";
        case KilledBy::liveness:
            return "failed its liveness check";
        case KilledBy::memory:
            return "went over memory_max";
        case KilledBy::operator_:
        case KilledBy::none:
            break;
    }
    if (exit.signal) {
        return "was killed by signal " + std::to_string(*exit.signal);
    }
    return "exited with code " + std::to_string(exit.code.value_or(-1));
}

}  // namespace

Service::Service(config::ServiceSpec spec, std::size_t index, std::optional<std::string> group)
    : m_spec(std::move(spec)), m_index(index), m_group(std::move(group)) {
    m_stopped = StopReason::operator_;
}

State Service::state() const {
    if (schedule().armed &&
        (m_phase == Phase::stopped || m_phase == Phase::done || m_phase == Phase::failed)) {
        return State::scheduled;
    }
    switch (m_phase) {
        case Phase::waiting:
        case Phase::restart_due:
            return State::waiting;
        case Phase::starting:
        case Phase::cancelled:
            return State::starting;
        case Phase::running:
            return State::running;
        case Phase::stopping:
            return State::stopping;
        case Phase::backoff:
            return State::backoff;
        case Phase::storm_pause:
        case Phase::storm_hold:
            return State::storm_pause;
        case Phase::stopped:
            return State::stopped;
        case Phase::done:
            return State::done;
        case Phase::failed:
            return State::failed;
        case Phase::paused:
            return State::paused;
    }
    return State::stopped;
}

bool Service::restart_pending() const {
    return m_phase == Phase::restart_due || m_phase == Phase::backoff ||
           m_phase == Phase::storm_pause || m_phase == Phase::storm_hold;
}

Event Service::event(EventType type, Now now) const {
    Event e;
    e.type = type;
    e.service = m_spec.name;
    e.group = m_group;
    e.at = now.wall;
    e.run = m_run;
    e.pid = m_pid;
    if (type == EventType::ready && replacing()) {
        e.reason = "stopping run " + std::to_string(m_draining.back().run);  // start_first
    }
    return e;
}

void Service::emit(Actions& out, Event e) const {
    out.push_back(EmitAction{std::move(e)});
}

void Service::reset_counters() {
    m_restarts = 0;
    m_storm_pauses = 0;
    m_liveness_kills = 0;
    m_oom_kills = 0;
    m_memory_kills = 0;
    m_crashes_at_reset = m_crashes;
    m_policy = PolicyState{};
    m_decision = Decision{};
}

void Service::want_up(Now now, Actions& out, bool fresh) {
    (void)now;
    (void)out;
    m_desired_up = true;
    switch (m_phase) {
        case Phase::stopped:
        case Phase::done:
        case Phase::failed:
            if (fresh) {
                reset_counters();
            }
            m_stopped.reset();
            m_phase = Phase::waiting;
            break;
        case Phase::backoff:
        case Phase::storm_pause:
        case Phase::storm_hold:
            // The operator asked: skip the rest of the wait.
            timer(Timer::restart).reset();
            m_phase = Phase::waiting;
            break;
        case Phase::stopping:
        case Phase::cancelled:
            m_after_stop = AfterStop::relaunch;
            break;
        case Phase::waiting:
        case Phase::restart_due:
        case Phase::starting:
        case Phase::running:
        case Phase::paused:
            break;
    }
}

void Service::launch(Now now, Actions& out) {
    if (m_phase != Phase::waiting && m_phase != Phase::restart_due) {
        return;
    }
    m_run = ++m_last_run;
    if (m_replacement && replacing() && m_replacement->new_run == 0) {
        m_replacement->new_run = m_run;
    }
    rotate_tails();
    m_phase = Phase::starting;
    m_ready = false;
    m_killing = KilledBy::none;
    m_deadline_kill = false;
    m_started = now.mono;
    m_started_wall = now.wall;
    m_timers = {};
    out.push_back(SpawnAction{m_index, m_run});
}

void Service::rotate_tails() {
    m_previous_tail = std::move(m_tail);
    m_previous_tail_run = m_tail_run;
    m_tail = OutputTail(m_spec.output.max_lines, m_spec.output.max_bytes);
    m_tail_run = m_run;
    m_output_matches.reset();
    m_match_output = m_spec.stop_when->output_matches || m_spec.give_up_when->output_matches;
}

void Service::on_spawned(std::uint64_t run, pid_t pid, Now now, Actions& out) {
    // Once a run: a report for a run whose pid is known means nothing.
    if (run != m_run || m_pid != 0 || (m_phase != Phase::starting && m_phase != Phase::cancelled)) {
        return;
    }
    m_pid = pid;
    m_last_launch_error.reset();
    // The run started when it was launched, as status `started_at` and the exit's
    // `duration` count it; the exec's confirmation may come later (under load, much).
    Event started = event(EventType::started, now);
    started.at = m_started_wall;
    emit(out, std::move(started));
    m_health = HealthStatus::unknown;
    m_health_failures = 0;
    m_memory_over = 0;
    m_notify_status.reset();
    if (m_phase == Phase::cancelled) {
        // A stop came while the launch was under way: it is acted on now.
        m_phase = Phase::starting;
        begin_stop(now, out, KilledBy::operator_, m_cancel_deadline);
        m_cancel_deadline.reset();
        return;
    }
    if (m_spec.timeout > Duration::zero()) {
        timer(Timer::run_timeout) = now.mono + m_spec.timeout;
    }
    if (m_spec.type == config::ServiceType::oneshot) {
        // A job runs, but is not ready until it has ended cleanly (state done): its
        // dependents wait for it to finish (SPEC §2 `type`).
        m_phase = Phase::running;
        start_liveness(now);
        return;
    }
    if (!m_spec.ready->enabled()) {
        // Without [ready], a run is ready as soon as its exec succeeded.
        m_ready = true;
        m_phase = Phase::running;
        start_liveness(now);
        if (replacing()) {
            emit(out, event(EventType::ready, now));  // says which run it stops
            on_ready_reached(now, out);
        }
        return;
    }
    timer(Timer::ready_timeout) = now.mono + m_spec.ready->timeout;
    if (m_spec.ready->probe.enabled()) {
        timer(Timer::ready_probe) = now.mono + m_spec.ready->probe.interval;
    }
}

Outcome Service::on_launch_failed(std::uint64_t run, const LaunchFailure& failure, Now now,
                                  Actions& out, double u01) {
    Outcome outcome;
    if (run != m_run || m_pid != 0 || (m_phase != Phase::starting && m_phase != Phase::cancelled)) {
        return outcome;
    }
    m_last_launch_error = failure.message;
    m_match_output = false;
    Event e = event(EventType::exited, now);
    e.pid = 0;
    e.launch_error = failure;
    emit(out, std::move(e));
    if (replacing()) {
        m_pid = 0;
        restore_draining("run " + std::to_string(run) + " failed to launch: " + failure.message,
                         now, out);
        return outcome;
    }
    if (m_phase == Phase::cancelled) {
        // Stopped before it was known to have failed: no crash, no gates.
        m_cancel_deadline.reset();
        end_stopped_run(now, out, outcome);
        return outcome;
    }
    RunResult result;
    result.launch_error = failure;
    result.clean = false;
    complete_run(result, now, out, u01, outcome);
    return outcome;
}

Outcome Service::on_exit(std::uint64_t run, const ProcessExit& status, Now now, Actions& out,
                         double u01, std::optional<TimePoint> cleanup_by) {
    Outcome outcome;
    for (std::size_t i = 0; i < m_draining.size(); ++i) {
        if (m_draining[i].run == run) {
            end_draining(i, status, now, out);  // never judged: it was replaced
            return outcome;
        }
    }
    if (run != m_run || m_pid == 0) {
        return outcome;  // a stale exit: that run was already replaced
    }
    end_pause(out);  // killed while frozen: judged as the run it was
    ExitRecord exit;
    exit.code = status.code;
    exit.signal = status.signal;
    exit.duration = m_started ? now.mono - *m_started : Duration::zero();
    exit.at = now.wall;
    exit.killed_by = m_killing;
    exit.timed_out = m_killing == KilledBy::timeout;
    exit.shutdown_kill = m_deadline_kill;
    exit.oom_killed = status.oom_killed;
    if (status.oom_killed) {
        ++m_oom_kills;
    }
    m_last_exit = exit;
    m_match_output = false;  // later lines are leftovers': the run is judged now

    Event e = event(EventType::exited, now);
    e.exit = exit;
    if (replacing()) {
        e.reason = "run " + std::to_string(m_draining.back().run) + " keeps running";
    }
    emit(out, std::move(e));

    const pid_t pgid = m_pid;
    m_pid = 0;
    m_ready = false;
    m_timers = {};
    if (m_spec.stop.mode == config::StopMode::group) {
        // What remains of the run's process group is stopped too (SPEC §3), by the
        // shutdown deadline if one runs.
        Duration grace = m_spec.stop.timeout;
        if (cleanup_by) {
            grace = std::min(grace, std::max(Duration::zero(), *cleanup_by - now.mono));
        }
        out.push_back(CleanupGroupAction{m_index, pgid, m_spec.stop.signal, grace});
    }

    if (replacing()) {
        restore_draining("run " + std::to_string(run) + " " + ended_words(exit), now, out);
        return outcome;
    }
    if ((m_phase == Phase::stopping && m_killing == KilledBy::operator_) || m_no_restarts) {
        end_stopped_run(now, out, outcome);  // stopped on request: never a crash, no gates
        return outcome;
    }
    RunResult result;
    result.code = exit.code;
    result.signal = exit.signal;
    result.killed_by = exit.killed_by;
    result.duration = exit.duration;
    result.oom_killed = exit.oom_killed;
    result.clean = is_clean(m_spec, exit);
    if (m_output_matches) {
        result.output = std::move(*m_output_matches);
        m_output_matches.reset();
    }
    complete_run(result, now, out, u01, outcome);
    return outcome;
}

void Service::end_stopped_run(Now now, Actions& out, Outcome& outcome) {
    if (m_after_stop == AfterStop::relaunch && m_desired_up) {
        m_phase = Phase::waiting;
        return;
    }
    m_phase = Phase::stopped;
    m_stopped = StopReason::operator_;
    outcome.ended = Outcome::Ended{StopReason::operator_, State::stopped};
    Event s = event(EventType::stopped, now);
    s.reason = "stopped on request";
    emit(out, std::move(s));
}

void Service::complete_run(const RunResult& result, Now now, Actions& out, double u01,
                           Outcome& outcome) {
    m_pid = 0;
    if (!result.clean) {
        ++m_crashes;
        outcome.crashed = true;
    }
    m_decision = decide(m_spec, result, m_policy, now.mono, u01);
    if (!m_decision.restart) {
        enter_ended(m_decision.reason, result.clean, m_decision.why, now, out, outcome);
        return;
    }
    ++m_restarts;
    outcome.restart = m_decision.delay;
    timer(Timer::restart) = now.mono + m_decision.delay;
    if (m_decision.storm_tripped) {
        ++m_storm_pauses;
        m_phase = Phase::storm_pause;
        Event e = event(EventType::storm_pause, now);
        e.delay = m_decision.delay;
        emit(out, std::move(e));
    } else {
        m_phase = Phase::backoff;
    }
    Event e = event(EventType::restarting, now);
    e.delay = m_decision.delay;
    e.restart = m_restarts;
    emit(out, std::move(e));
    if (m_decision.delay <= Duration::zero()) {
        timer(Timer::restart).reset();
        m_phase = Phase::restart_due;
    }
}

void Service::enter_ended(StopReason reason, bool clean, const std::string& why, Now now,
                          Actions& out, Outcome& outcome) {
    m_phase = clean ? Phase::done : Phase::failed;
    m_stopped = reason;
    if (schedule().armed) {
        ScheduleRecord& record = schedule_record();
        record.last_result = clean ? State::done : State::failed;
        ++record.episodes_ended;
        if (clean) {
            record.last_success = now.wall;
            record.succeeded = true;
        }
    }
    m_desired_up = false;
    timer(Timer::restart).reset();
    outcome.ended = Outcome::Ended{reason, clean ? State::done : State::failed};
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

void Service::record_output(std::uint64_t run, Stream stream, std::string_view text, double wall) {
    if (m_tail_run && run == *m_tail_run) {
        m_tail.append(stream, text, wall);
        if (m_match_output && run == m_run) {
            OutputMatches found;  // empty: no allocation unless a pattern matches
            match_output_line(m_spec, text, found);
            if (found.stop_when || found.give_up_when) {
                if (!m_output_matches) {
                    m_output_matches = std::make_unique<OutputMatches>();
                }
                if (found.stop_when) {
                    m_output_matches->stop_when = std::move(found.stop_when);
                }
                if (found.give_up_when) {
                    m_output_matches->give_up_when = std::move(found.give_up_when);
                }
            }
        }
    } else if (m_previous_tail_run && run == *m_previous_tail_run) {
        m_previous_tail.append(stream, text, wall);
    }
}

}  // namespace pkit::core
