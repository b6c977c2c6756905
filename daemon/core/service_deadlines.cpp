// Service: deadlines by phase, readiness and liveness (the table's deadline, probe and
// notify rows).

#include "daemon/core/service.hpp"

#include "config/values.hpp"

namespace pkit::core {

bool Service::fire(Timer t, Now now) {
    OptionalTime& at = timer(t);
    if (!at || now.mono < *at) {
        return false;
    }
    at.reset();
    return true;
}

void Service::on_time(Now now, Actions& out) {
    for (std::size_t i = 0; i < m_draining.size(); ++i) {
        if (m_draining[i].kill && now.mono >= *m_draining[i].kill) {
            signal_draining(i, now, out, SIGKILL);
        }
    }
    switch (m_phase) {
        case Phase::starting:
            if (fire(Timer::run_timeout, now)) {
                begin_stop(now, out, KilledBy::timeout, std::nullopt);
            } else if (fire(Timer::ready_timeout, now)) {
                timer(Timer::ready_probe).reset();
                begin_stop(now, out, KilledBy::ready_timeout, std::nullopt);
            } else if (fire(Timer::ready_probe, now)) {  // re-armed by the result
                out.push_back(ProbeAction{m_index, m_run, ProbePurpose::ready});
            }
            break;
        case Phase::running:
            if (fire(Timer::run_timeout, now)) {
                begin_stop(now, out, KilledBy::timeout, std::nullopt);
            } else if (fire(Timer::health_probe, now)) {  // re-armed by the result
                out.push_back(ProbeAction{m_index, m_run, ProbePurpose::health});
            } else if (fire(Timer::watchdog, now)) {
                // Each period without WATCHDOG=1 counts as one failed probe.
                timer(Timer::watchdog) = now.mono + m_spec.health->watchdog;
                health_result(false, now, out);
            }
            break;
        case Phase::stopping:
            if (fire(Timer::kill, now)) {
                kill_now(out);
            }
            break;
        case Phase::backoff:
        case Phase::storm_pause:
        case Phase::storm_hold:
            if (fire(Timer::restart, now)) {
                m_phase = Phase::restart_due;
            }
            break;
        case Phase::waiting:
        case Phase::restart_due:
        case Phase::cancelled:
        case Phase::stopped:
        case Phase::done:
        case Phase::failed:
        case Phase::paused:  // held until the resume
            break;           // no deadline is armed
    }
}

std::optional<TimePoint> Service::next_deadline() const {
    std::optional<TimePoint> next = schedule().tick;
    for (const OptionalTime& at : m_timers) {
        if (at && (!next || *at < *next)) {
            next = *at;
        }
    }
    for (const DrainingRun& d : m_draining) {
        if (d.kill && (!next || *d.kill < *next)) {
            next = *d.kill;
        }
    }
    return next;
}

void Service::become_ready(Now now, Actions& out) {
    m_ready = true;
    timer(Timer::ready_timeout).reset();
    timer(Timer::ready_probe).reset();
    if (m_phase == Phase::starting) {
        m_phase = Phase::running;
    }
    emit(out, event(EventType::ready, now));
    start_liveness(now);
    on_ready_reached(now, out);
}

// The first liveness probe runs one interval after the run is ready.
void Service::start_liveness(Now now) {
    const config::ProbeSpec& health = *m_spec.health;
    if (health.kind == config::ProbeKind::watchdog) {
        timer(Timer::watchdog) = now.mono + health.watchdog;
    } else if (health.enabled()) {
        timer(Timer::health_probe) = now.mono + health.interval;
    }
}

void Service::clear_probes() {
    timer(Timer::ready_timeout).reset();
    timer(Timer::ready_probe).reset();
    timer(Timer::health_probe).reset();
    timer(Timer::watchdog).reset();
}

void Service::on_probe_result(std::uint64_t run, ProbePurpose purpose, bool ok, Now now,
                              Actions& out) {
    if (run != m_run || m_pid == 0) {
        return;
    }
    if (purpose == ProbePurpose::ready) {
        if (m_phase != Phase::starting || m_ready) {
            return;
        }
        if (ok) {
            become_ready(now, out);
        } else {
            timer(Timer::ready_probe) = now.mono + m_spec.ready->probe.interval;
        }
        return;
    }
    if (m_phase != Phase::running) {
        return;
    }
    health_result(ok, now, out);
    if (m_phase == Phase::running) {
        timer(Timer::health_probe) = now.mono + m_spec.health->interval;
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
    if (!ok && m_health_failures >= m_spec.health->failures) {
        ++m_liveness_kills;
        Event e = event(EventType::liveness_kill, now);
        e.reason = std::to_string(m_health_failures) + " failed probes in a row";
        emit(out, std::move(e));
        clear_probes();
        begin_stop(now, out, KilledBy::liveness, std::nullopt);
    }
}

void Service::on_memory(std::uint64_t run, std::uint64_t bytes, bool cgroup, Now now,
                        Actions& out) {
    const auto& limit = m_spec.health->memory_max;
    if (run != m_run || m_pid == 0 || !limit ||
        (m_phase != Phase::starting && m_phase != Phase::running)) {
        return;
    }
    if (bytes <= *limit) {
        m_memory_over = 0;
        return;
    }
    if (++m_memory_over < 2) {
        return;
    }
    ++m_memory_kills;
    Event e = event(EventType::liveness_kill, now);
    e.reason = "over memory_max " + config::format_size(*limit) + " (" +
               (cgroup ? "memory.current " : "RSS ") + std::to_string(bytes >> 20) + "MiB)";
    emit(out, std::move(e));
    clear_probes();
    begin_stop(now, out, KilledBy::memory, std::nullopt);
}

void Service::on_notify(std::uint64_t run, const NotifyMessage& message, Now now, Actions& out) {
    if (run != m_run || m_pid == 0) {
        return;
    }
    if (message.status) {
        m_notify_status = message.status;
    }
    if (m_phase == Phase::paused) {
        // Sent before the freeze, read after it: kept for the resume.
        PauseRecord& p = *m_pause;
        if (message.extend_timeout_usec && p.starting && p.ready_timeout_left) {
            p.ready_timeout_left = std::chrono::microseconds(*message.extend_timeout_usec);
        }
        if (message.ready && p.starting && !m_ready && m_spec.ready->notify) {
            m_ready = true;
            p.starting = false;  // resumed running, its liveness from then on
            p.ready_timeout_left.reset();
            emit(out, event(EventType::ready, now));
        }
        return;
    }
    if (message.extend_timeout_usec && m_phase == Phase::starting && due(Timer::ready_timeout)) {
        timer(Timer::ready_timeout) =
            now.mono + std::chrono::microseconds(*message.extend_timeout_usec);
    }
    if (message.ready && m_phase == Phase::starting && !m_ready && m_spec.ready->notify) {
        become_ready(now, out);
    }
    if (message.watchdog && m_phase == Phase::running &&
        m_spec.health->kind == config::ProbeKind::watchdog) {
        timer(Timer::watchdog) = now.mono + m_spec.health->watchdog;
        health_result(true, now, out);
    }
}

}  // namespace pkit::core
