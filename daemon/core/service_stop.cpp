// Service: stops and restarts (the table's stop, group restart, root restart, reload,
// kill_now and storm hold rows).

#include <algorithm>
#include <csignal>

#include "daemon/core/service.hpp"

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

}  // namespace

pid_t Service::pid_of(std::uint64_t run) const {
    if (m_run == run && m_pid != 0) {
        return m_pid;
    }
    auto draining = std::ranges::find(m_draining, run, &DrainingRun::run);
    return draining == m_draining.end() ? 0 : draining->pid;
}

void Service::begin_stop(Now now, Actions& out, KilledBy by, std::optional<TimePoint> deadline) {
    if (m_pid == 0) {
        return;
    }
    end_pause(out);  // thawed first: a frozen run could not act on its stop signal
    if (m_phase != Phase::stopping) {
        m_killing = by;
        m_phase = Phase::stopping;
        m_timers = {};
        bool group = m_spec.stop.mode == config::StopMode::group;
        out.push_back(SignalAction{m_index, m_run, m_pid, m_spec.stop.signal, group, true});
        timer(Timer::kill) = now.mono + m_spec.stop.timeout;
    } else if (by == KilledBy::operator_ && m_killing != KilledBy::operator_) {
        // A timeout kill already under way becomes an operator stop: no crash follows.
        m_killing = KilledBy::operator_;
    }
    if (deadline) {
        timer(Timer::kill) = earliest(due(Timer::kill), deadline);
    }
}

void Service::stop(Now now, Actions& out, AfterStop after, std::optional<TimePoint> deadline) {
    if (!m_draining.empty() && after != AfterStop::relaunch) {
        // A stop ends both runs of a replacement; the restart that began it fails.
        if (m_replacement && !m_replacement->done) {
            m_replacement->done = true;
            m_replacement->failure = "stopped before the new run was ready";
        }
        stop_draining(now, out, m_spec.stop.signal);
        for (DrainingRun& d : m_draining) {
            if (deadline && (!d.kill || *deadline < *d.kill)) {
                d.kill = deadline;
            }
        }
    }
    m_after_stop = after;
    m_desired_up = after == AfterStop::relaunch;
    switch (m_phase) {
        case Phase::starting:
            if (m_pid == 0) {
                // Forked but not yet reported: the stop waits for the report.
                m_phase = Phase::cancelled;
                m_cancel_deadline = deadline;
                break;
            }
            begin_stop(now, out, KilledBy::operator_, deadline);
            break;
        case Phase::cancelled:
            m_cancel_deadline = earliest(std::optional<TimePoint>(m_cancel_deadline), deadline);
            break;
        case Phase::running:
        case Phase::stopping:
        case Phase::paused:
            begin_stop(now, out, KilledBy::operator_, deadline);
            break;
        case Phase::waiting:
        case Phase::restart_due:
        case Phase::backoff:
        case Phase::storm_pause:
        case Phase::storm_hold:
            timer(Timer::restart).reset();
            if (after == AfterStop::relaunch) {
                // Still a pending automatic restart if it was one: launched at once.
                m_phase = restart_pending() ? Phase::restart_due : Phase::waiting;
                break;
            }
            m_phase = Phase::stopped;
            m_stopped = StopReason::operator_;
            {
                Event e = event(EventType::stopped, now);
                e.reason = "stopped on request";
                emit(out, std::move(e));
            }
            break;
        case Phase::stopped:
        case Phase::done:
        case Phase::failed:
            if (after == AfterStop::relaunch) {
                want_up(now, out, true);
            }
            break;
    }
}

void Service::restart_by_group(Now now, Actions& out) {
    if (m_pid == 0 || m_phase == Phase::stopping) {
        return;
    }
    ++m_restarts;
    stop(now, out, AfterStop::relaunch, std::nullopt);
}

void Service::restart_by_root(Now now, Actions& out) {
    ++m_restarts;
    m_policy = PolicyState{};
    m_decision = Decision{};
    m_desired_up = true;
    m_stopped.reset();
    timer(Timer::restart).reset();
    if (m_pid != 0 || m_phase == Phase::starting || m_phase == Phase::cancelled) {
        stop(now, out, AfterStop::relaunch, std::nullopt);
    } else {
        m_phase = Phase::waiting;
    }
}

void Service::replace_spec(config::ServiceSpec spec, std::optional<std::string> group) {
    m_spec = std::move(spec);
    m_group = std::move(group);
    reset_counters();
    timer(Timer::restart).reset();
    if (m_phase == Phase::restart_due) {
        m_phase = Phase::waiting;  // no longer an automatic restart
    }
}

void Service::hold_until(TimePoint until) {
    if (!restart_pending() || !m_desired_up) {
        return;
    }
    OptionalTime& restart = timer(Timer::restart);
    if (!restart || *restart < until) {
        restart = until;
        m_phase = Phase::storm_hold;
    } else if (m_phase != Phase::storm_hold) {
        m_phase = Phase::storm_pause;  // its own wait ends later than the daemon's
    }
}

void Service::kill_now(Actions& out, bool deadline) {
    if (m_pid == 0) {
        return;
    }
    m_deadline_kill = deadline;
    end_pause(out);  // SIGKILL ends a frozen process too; the thaw is for the next run
    if (m_phase != Phase::stopping) {
        // The shutdown deadline came before this run was asked to stop: pkitd ends it,
        // so its exit is no crash (SPEC §3) and it is not restarted.
        m_phase = Phase::stopping;
        m_killing = KilledBy::operator_;
        m_after_stop = AfterStop::shutdown;
        m_desired_up = false;
    }
    m_timers = {};  // sent now: the escalation must not send it a second time
    bool group = m_spec.stop.mode == config::StopMode::group;
    out.push_back(SignalAction{m_index, m_run, m_pid, SIGKILL, group, false});
}

}  // namespace pkit::core
