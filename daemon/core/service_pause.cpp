// Service: pause and resume (SPEC §15; the table's pause and resume rows and its paused
// column). The shell freezes and thaws the run's cgroup (FreezeAction); the core holds
// the run's deadlines while it is frozen, so that nothing fires against a run that
// cannot answer: no probe fails, no ready or run timeout runs out.

#include <algorithm>

#include "config/values.hpp"
#include "daemon/core/service.hpp"

namespace pkit::core {

void Service::pause(Now now, Actions& out) {
    if (!can_pause() || m_phase == Phase::paused) {
        return;
    }
    auto record = std::make_unique<PauseRecord>();
    record->since = now.mono;
    record->since_wall = now.wall;
    record->starting = m_phase == Phase::starting;
    // What is left of each deadline; one already due (its input not handled yet) fires
    // at the resume.
    auto left = [&](Timer t) -> std::optional<Duration> {
        if (auto at = due(t)) {
            return std::max(Duration::zero(), *at - now.mono);
        }
        return std::nullopt;
    };
    record->run_timeout_left = left(Timer::run_timeout);
    record->ready_timeout_left = left(Timer::ready_timeout);
    // Every other timer of a starting or running run is a probe or the watchdog: they
    // start afresh at the resume. A probe attempt in flight is ignored when it answers.
    m_timers = {};
    m_pause = std::move(record);
    m_phase = Phase::paused;
    out.push_back(FreezeAction{m_index, m_run, true});
    emit(out, event(EventType::paused, now));
}

void Service::resume(Now now, Actions& out) {
    if (m_phase != Phase::paused) {
        return;
    }
    const PauseRecord record = *m_pause;
    m_pause.reset();
    m_phase = record.starting ? Phase::starting : Phase::running;
    out.push_back(FreezeAction{m_index, m_run, false});
    Event e = event(EventType::resumed, now);
    std::string words = "after ";
    words += config::format_duration(now.mono - record.since);
    words += " paused";
    e.reason = std::move(words);
    emit(out, std::move(e));
    if (record.run_timeout_left) {
        timer(Timer::run_timeout) = now.mono + *record.run_timeout_left;
    }
    if (m_phase == Phase::starting) {
        if (record.ready_timeout_left) {
            timer(Timer::ready_timeout) = now.mono + *record.ready_timeout_left;
        }
        if (m_spec.ready->probe.enabled()) {
            timer(Timer::ready_probe) = now.mono + m_spec.ready->probe.interval;
        }
        return;
    }
    start_liveness(now);  // the first probe one interval from now, as after a start
}

void Service::end_pause(Actions& out) {
    if (m_phase != Phase::paused) {
        return;
    }
    m_phase = m_pause->starting ? Phase::starting : Phase::running;
    m_pause.reset();
    out.push_back(FreezeAction{m_index, m_run, false});
}

}  // namespace pkit::core
