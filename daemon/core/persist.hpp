#pragma once
// The state an upgrade in place hands to the next pkitd (SPEC §16), walked field by
// field. One walk serves both directions: the shell's writer reads every field, its
// reader fills them (daemon/shell/upgrade/state_file.*). Each field is named once,
// here, beside nothing else: a field added to a class and not to its walk is a field
// an upgrade forgets. The state grid's `restore` row (service_table.hpp) round-trips
// every column of the table, comparing every query, and
// tests/unit/shell/upgrade/test_state_file.cpp the state file.
//
// An Archive offers:
//   bool loading() const;
//   int version() const;                          the state format being written or
//                                                  read: a field added in version N is
//                                                  walked only when version() >= N
//   void value(const char* name, T& v)            bool, int, std::uint64_t, double,
//                                                  std::string, Duration, std::optional
//                                                  of those
//   void time(const char* name, TimePoint& | OptionalTime& | std::optional<TimePoint>&)
//                                                  monotonic moments, written as time
//                                                  relative to the hand-over
//   void enumeration(const char* name, E& v, E last)   0..last, anything else refused
//   void times(const char* name, std::vector<TimePoint>&)
//   void object(const char* name, T& v)           a nested walk: v.persist(a)
//   void lines(const char* name, std::vector<TailLine>&)
// A reader that meets a missing or mistyped field records the error, leaves the field
// as it was and carries on; the shell checks it once at the end.

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "daemon/core/output_tail.hpp"
#include "daemon/core/policy.hpp"
#include "daemon/core/service.hpp"
#include "daemon/core/supervisor.hpp"
#include "daemon/core/types.hpp"

namespace pkit::core {

// The version of the state file this pkitd writes, and the oldest it still reads
// (`pkitd --upgrade-check` lists them all). Version 2 added a paused run's record,
// an exit's oom_killed and a service's oom_kills (SPEC §15), and the counts `scale` set;
// version 3 the client connections (the shell's part alone); version 4 a service's
// memory_kills and its run's measurements over memory_max in a row (SPEC §20), and
// `killed_by` memory.
inline constexpr int k_state_version = 4;
inline constexpr int k_oldest_state_version = 1;

template <class Archive>
void persist_pause(Archive& a, Service::PauseRecord& p) {
    a.time("since", p.since);
    a.value("since_wall", p.since_wall);
    a.value("starting", p.starting);
    a.value("run_timeout_left", p.run_timeout_left);
    a.value("ready_timeout_left", p.ready_timeout_left);
}

template <class Archive>
void StormScore::persist(Archive& a) {
    a.value("score", m_score);
    a.time("at", m_at);
}

template <class Archive>
void RestartWindow::persist(Archive& a) {
    a.value("total", m_total);
    a.times("times", m_times);
}

template <class Archive>
void OutputTail::persist(Archive& a) {
    std::vector<TailLine> lines;
    if (!a.loading()) {
        lines.reserve(m_count);
        for (std::size_t i = 0; i < m_count; ++i) {
            lines.push_back(at(i));
        }
    }
    bool truncated = m_truncated;
    a.lines("lines", lines);
    a.value("truncated", truncated);
    if (a.loading()) {
        clear();
        for (const TailLine& line : lines) {
            append(line.stream, line.text, line.at);
        }
        m_truncated = m_truncated || truncated;
    }
}

template <class Archive>
void persist_exit(Archive& a, ExitRecord& e) {
    a.value("code", e.code);
    a.value("signal", e.signal);
    a.value("duration", e.duration);
    a.value("at", e.at);
    a.value("timed_out", e.timed_out);
    if (a.version() >= 2) {
        a.value("oom_killed", e.oom_killed);
    }
    KilledBy by = e.killed_by;
    if (a.version() < 4 && by == KilledBy::memory) {
        by = KilledBy::liveness;  // version 4's; an older pkitd is told its nearest
    }
    a.enumeration("killed_by", by, a.version() >= 4 ? KilledBy::memory : KilledBy::operator_);
    e.killed_by = by;
}

template <class Archive>
void persist_decision(Archive& a, Decision& d) {
    a.value("restart", d.restart);
    a.enumeration("reason", d.reason, StopReason::operator_);
    a.value("why", d.why);
    a.value("delay", d.delay);
    a.value("storm_tripped", d.storm_tripped);
    a.value("backoff_step", d.backoff_step);
    a.value("restarts_counted", d.restarts_counted);
    a.value("storm_score", d.storm_score);
}

template <class Archive>
void persist_schedule(Archive& a, ScheduleRecord& r) {
    a.value("armed", r.armed);
    a.time("tick", r.tick);
    a.value("tick_wall", r.tick_wall);
    a.value("by_wall", r.by_wall);
    a.value("last_started", r.last_started);
    std::optional<int> result;
    if (r.last_result) {
        result = static_cast<int>(*r.last_result);
    }
    a.value("last_result", result);
    if (a.loading()) {
        r.last_result.reset();
        if (result && (*result == static_cast<int>(State::done) ||
                       *result == static_cast<int>(State::failed))) {
            r.last_result = static_cast<State>(*result);
        } else if (result) {
            a.fail("last_result", "neither done nor failed");
        }
    }
    a.value("last_success", r.last_success);
    a.value("missed", r.missed);
    a.value("episodes_ended", r.episodes_ended);
    a.value("succeeded", r.succeeded);
}

template <class Archive>
void Service::persist(Archive& a) {
    a.enumeration("phase", m_phase, Phase::paused);
    a.value("desired_up", m_desired_up);
    a.enumeration("after_stop", m_after_stop, AfterStop::shutdown);
    a.time("cancel_deadline", m_cancel_deadline);
    static constexpr const char* k_timer_names[k_timers] = {
        "kill",         "run_timeout", "ready_timeout", "ready_probe",
        "health_probe", "watchdog",    "restart"};
    for (std::size_t i = 0; i < k_timers; ++i) {
        a.time(k_timer_names[i], m_timers[i]);
    }
    std::uint64_t run = m_run;
    a.value("run", run);
    m_run = run;
    // The highest run number given out (start_first can make an older run current);
    // a state written without it has none above `run`.
    std::uint64_t last_run = m_last_run;
    a.value("last_run", last_run);
    m_last_run = std::max(last_run, m_run);
    int pid = m_pid;
    a.value("pid", pid);
    // 0 is no run; a run's pid is a child's, never 1 (kill(-1) would reach every process).
    if (a.loading() && (pid < 0 || pid == 1)) {
        a.fail("pid", "not a run's process");
        pid = 0;
    }
    m_pid = pid;
    a.value("ready", m_ready);
    // KilledBy::memory is version 4's: an older pkitd is told liveness, its nearest.
    KilledBy killing = m_killing;
    if (a.version() < 4 && killing == KilledBy::memory) {
        killing = KilledBy::liveness;
    }
    a.enumeration("killing", killing, a.version() >= 4 ? KilledBy::memory : KilledBy::operator_);
    m_killing = killing;
    a.time("started", m_started);
    a.value("started_wall", m_started_wall);
    a.enumeration("health", m_health, HealthStatus::unhealthy);
    a.value("health_failures", m_health_failures);
    a.value("notify_status", m_notify_status);
    a.value("restarts", m_restarts);
    a.value("crashes", m_crashes);
    a.value("crashes_at_reset", m_crashes_at_reset);
    a.value("no_restarts", m_no_restarts);
    a.value("storm_pauses", m_storm_pauses);
    a.value("liveness_kills", m_liveness_kills);
    if (a.version() >= 2) {
        a.value("oom_kills", m_oom_kills);
    }
    if (a.version() >= 4) {
        a.value("memory_kills", m_memory_kills);
        a.value("memory_over", m_memory_over);
    }
    std::optional<int> stopped;
    if (m_stopped) {
        stopped = static_cast<int>(*m_stopped);
    }
    a.value("stopped", stopped);
    if (a.loading()) {
        m_stopped.reset();
        if (stopped && *stopped >= 0 && *stopped <= static_cast<int>(StopReason::operator_)) {
            m_stopped = static_cast<StopReason>(*stopped);
        } else if (stopped) {
            a.fail("stopped", "not a stop reason");
        }
    }
    bool has_exit = m_last_exit.has_value();
    a.value("has_last_exit", has_exit);
    if (has_exit) {
        if (!m_last_exit) {
            m_last_exit.emplace();
        }
        a.object("last_exit", [&](Archive& nested) { persist_exit(nested, *m_last_exit); });
    } else if (a.loading()) {
        m_last_exit.reset();
    }
    a.value("last_launch_error", m_last_launch_error);
    a.value("backoff_step", m_policy.backoff_step);
    a.object("window", [&](Archive& nested) { m_policy.window.persist(nested); });
    a.object("storm", [&](Archive& nested) { m_policy.storm.persist(nested); });
    a.object("decision", [&](Archive& nested) { persist_decision(nested, m_decision); });
    a.object("tail", [&](Archive& nested) { m_tail.persist(nested); });
    a.object("previous_tail", [&](Archive& nested) { m_previous_tail.persist(nested); });
    std::optional<std::string> stop_when;
    std::optional<std::string> give_up_when;
    if (m_output_matches) {
        stop_when = m_output_matches->stop_when;
        give_up_when = m_output_matches->give_up_when;
    }
    a.value("matched_stop_when", stop_when);
    a.value("matched_give_up_when", give_up_when);
    if (a.loading()) {
        m_output_matches.reset();
        if (stop_when || give_up_when) {
            m_output_matches =
                std::make_unique<OutputMatches>(OutputMatches{stop_when, give_up_when});
        }
    }
    a.value("match_output", m_match_output);
    a.value("tail_run", m_tail_run);
    a.value("previous_tail_run", m_previous_tail_run);
    ScheduleRecord record = schedule();
    a.object("schedule", [&](Archive& nested) { persist_schedule(nested, record); });
    if (a.loading() && has_schedule()) {
        schedule_record() = record;
    }
    if (a.version() >= 2) {
        bool paused = m_pause != nullptr;
        a.value("paused", paused);
        if (paused) {
            if (!m_pause) {
                m_pause = std::make_unique<PauseRecord>();
            }
            a.object("pause", [&](Archive& nested) { persist_pause(nested, *m_pause); });
        } else if (a.loading()) {
            m_pause.reset();
        }
    }
    if (a.loading() && (m_phase == Phase::paused) != (m_pause != nullptr)) {
        a.fail("paused", "does not match the phase");
    }
}

template <class Archive>
void Supervisor::persist(Archive& a) {
    a.object("daemon_storm", [&](Archive& nested) { m_daemon_storm.persist(nested); });
    a.time("daemon_storm_until", m_daemon_storm_until);
    a.value("daemon_storm_pauses", m_daemon_storm_pauses);
    a.time("epoch", m_epoch);
    a.object("root_window", [&](Archive& nested) { m_root_window.persist(nested); });
    // Groups and services by name: the next pkitd builds its own indices from the same
    // configuration, and a name it does not know is refused by the shell before this.
    a.each(
        "groups", m_groups.size(), [&](std::size_t i) { return m_groups[i].spec.name; },
        [&](std::size_t i, Archive& nested) {
            nested.object("intensity", [&](Archive& n2) { m_groups[i].intensity.persist(n2); });
            nested.value("failed", m_groups[i].failed);
        });
    std::vector<std::size_t> live;
    for (std::size_t i = 0; i < m_services.size(); ++i) {
        if (!m_retired[i]) {
            live.push_back(i);
        }
    }
    a.each(
        "services", live.size(), [&](std::size_t k) { return m_services[live[k]]->name(); },
        [&](std::size_t k, Archive& nested) { touch(live[k]).persist(nested); });
}

}  // namespace pkit::core
