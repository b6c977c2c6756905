// Service: a scheduled job's ticks and episodes (SPEC §12). An episode is the
// ordinary life of a oneshot from want_up to done or failed; the schedule only
// starts it, counts the ticks it misses, and keeps how it ended.

#include "daemon/core/service.hpp"

namespace pkit::core {

namespace {

// A timer on the monotonic clock can fire a hair before the wall clock shows the
// tick's second: within this it is the tick, not a clock set back.
constexpr double k_wall_slack = 0.001;

}  // namespace

void Service::arm(const std::optional<Tick>& next) {
    if (!has_schedule()) {
        return;
    }
    m_schedule.armed = true;
    m_schedule.tick.reset();
    if (next) {
        m_schedule.tick = next->mono;
        m_schedule.tick_wall = next->wall;
        m_schedule.by_wall = next->by_wall;
    }
}

void Service::disarm() {
    m_schedule.armed = false;
    m_schedule.tick.reset();
    if (m_phase == Phase::done || m_phase == Phase::failed) {
        m_phase = Phase::stopped;
        m_stopped = StopReason::operator_;
    }
}

void Service::note_episode(Now now) {
    m_schedule.last_started = now.wall;
}

void Service::on_tick(Now now, Actions& out, const std::optional<Tick>& next) {
    if (!m_schedule.armed || !m_schedule.tick || now.mono < *m_schedule.tick) {
        return;
    }
    if (m_schedule.by_wall && now.wall + k_wall_slack < m_schedule.tick_wall) {
        // The wall clock was set back since the tick was armed: it waits for its time.
        m_schedule.tick = now.mono + std::chrono::round<Duration>(std::chrono::duration<double>(
                                         m_schedule.tick_wall - now.wall));
        return;
    }
    arm(next);
    if (m_phase == Phase::stopped || m_phase == Phase::done || m_phase == Phase::failed) {
        note_episode(now);
        want_up(now, out, true);
        return;
    }
    ++m_schedule.missed;
    Event e = event(EventType::missed, now);
    e.reason = "the tick came while an episode was in progress";
    emit(out, std::move(e));
}

}  // namespace pkit::core
