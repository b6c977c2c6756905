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
    ScheduleRecord& record = schedule_record();
    record.armed = true;
    record.tick.reset();
    if (next) {
        record.tick = next->mono;
        record.tick_wall = next->wall;
        record.by_wall = next->by_wall;
    }
}

void Service::disarm() {
    if (m_schedule) {
        m_schedule->armed = false;
        m_schedule->tick.reset();
    }
    if (m_phase == Phase::done || m_phase == Phase::failed) {
        m_phase = Phase::stopped;
        m_stopped = StopReason::operator_;
    }
}

void Service::note_episode(Now now) {
    if (has_schedule()) {
        schedule_record().last_started = now.wall;
    }
}

void Service::on_tick(Now now, Actions& out, const std::optional<Tick>& next) {
    ScheduleRecord* record = m_schedule.get();
    if (record == nullptr || !record->armed || !record->tick || now.mono < *record->tick) {
        return;
    }
    if (record->by_wall && now.wall + k_wall_slack < record->tick_wall) {
        // The wall clock was set back since the tick was armed: it waits for its time.
        record->tick = now.mono + std::chrono::round<Duration>(
                                      std::chrono::duration<double>(record->tick_wall - now.wall));
        return;
    }
    arm(next);
    if (m_phase == Phase::stopped || m_phase == Phase::done || m_phase == Phase::failed) {
        note_episode(now);
        want_up(now, out, true);
        return;
    }
    ++record->missed;
    Event e = event(EventType::missed, now);
    e.reason = "the tick came while an episode was in progress";
    emit(out, std::move(e));
}

}  // namespace pkit::core
