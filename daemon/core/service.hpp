#pragma once
// The state machine of one service (SPEC §3, §5, §7). Events come in as method calls
// with an explicit `now`; effects go out as Actions appended to the caller's list, and
// what the Supervisor must know of an input's effect comes back as an Outcome.
// No clock reads, no I/O, no libuv: the Supervisor drives it and the shell executes.
//
// Its phases, its inputs and what every input does in every phase, as grids that a
// test drives cell by cell: service_table.hpp.
//
// `desired` (up/down) is kept apart from the state: "stopped by the operator" is
// desired = down, and a run being stopped knows what follows its exit (`m_after_stop`).

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/core/output_tail.hpp"
#include "daemon/core/policy.hpp"
#include "daemon/core/schedule.hpp"
#include "daemon/core/service_table.hpp"
#include "daemon/core/types.hpp"

namespace pkit::core {

using Actions = std::vector<Action>;

// What happens once a run that pkitd is stopping has exited.
enum class AfterStop { stay_stopped, relaunch, shutdown };

// The latest start_first replacement of a service: which run it replaces, and how it
// ended. The shell answers the restart that asked for it from this record.
struct Replacement {
    std::uint64_t old_run = 0;
    std::uint64_t new_run = 0;           // 0 until launched
    bool done = false;                   // the new run is ready, or failed
    std::optional<std::string> failure;  // why the new run failed: the old one runs on
};

// What a run's end did that the Supervisor acts on (the storm score, the group's
// intensity and strategy, escalation), so that it never compares counters. Only the
// inputs that end a run return one; the others return nothing.
struct [[nodiscard]] Outcome {
    struct Ended {
        StopReason reason;
        State state;  // stopped, done or failed
    };
    bool crashed = false;             // a run ended as a crash (SPEC §3)
    std::optional<Duration> restart;  // an automatic restart was decided, after this delay
    std::optional<Ended> ended;       // supervision ended
};

class Service {
public:
    Service(config::ServiceSpec spec, std::size_t index, std::optional<std::string> group);

    // --- Inputs (the grids' rows: service_table.hpp) -----------------------------
    // The operator (or autostart) wants the service up. `fresh` clears the counters
    // (a start of a stopped, done or failed service). Leaves it `waiting`: the
    // Supervisor launches it once its dependencies are satisfied.
    void want_up(Now now, Actions& out, bool fresh);
    // Starts run `run() + 1` (SpawnAction). Only from `waiting`.
    void launch(Now now, Actions& out);
    void on_spawned(std::uint64_t run, pid_t pid, Now now, Actions& out);
    [[nodiscard]] Outcome on_launch_failed(std::uint64_t run, const LaunchFailure& failure, Now now,
                                           Actions& out, double u01);
    // The main process of `run` ended (the shell decoded its wait status). With a
    // `cleanup_by` (the shutdown deadline), what remains of its group is killed by then.
    [[nodiscard]] Outcome on_exit(std::uint64_t run, const ProcessExit& exit, Now now, Actions& out,
                                  double u01, std::optional<TimePoint> cleanup_by = std::nullopt);
    // Fires whatever deadline of the current phase is due at `now`.
    void on_time(Now now, Actions& out);
    // Stops the service: a run gets its stop signal, a pending restart is cancelled.
    // `deadline` (shutdown_timeout) caps the SIGKILL escalation.
    void stop(Now now, Actions& out, AfterStop after, std::optional<TimePoint> deadline);
    // The daemon-wide storm guard holds a pending automatic restart until `until`
    // (state storm_pause). Does nothing unless a restart is pending.
    void hold_until(TimePoint until);
    // The group's strategy restarts this sibling (SPEC §6): a run in progress is
    // stopped (not a crash) and a fresh one started; counted in `restarts`. Nothing
    // without a run (pid known) that is not already being stopped.
    void restart_by_group(Now now, Actions& out);
    // A root restart of the failed group: counted in `restarts`, fresh policy state,
    // and wanted up again.
    void restart_by_root(Now now, Actions& out);
    // start_first: replaces the current run by a new one launched beside it (the
    // start_first grid). Does nothing and returns false unless the service is a ready, running
    // `type = "service"` run with `order = "start_first"` and nothing draining; the
    // caller then restarts it the stop_first way. A `spec` is a reload's new
    // definition, whose `order` decides; taken (moved from) with fresh counters only
    // when this returns true.
    bool begin_replacement(Now now, Actions& out, config::ServiceSpec* spec = nullptr);
    // Whether begin_replacement(…, spec) would replace the run now (the same test,
    // changing nothing): `reload --dry-run` tells a start_first restart from others.
    bool can_replace(const config::ServiceSpec* spec = nullptr) const;
    // Reload: takes a new definition while no run exists. Counters start afresh; `run`
    // keeps counting and the tails stay.
    void replace_spec(config::ServiceSpec spec, std::optional<std::string> group);
    void set_group(std::optional<std::string> group) { m_group = std::move(group); }
    // pkitd is shutting down: a run that ends from now on is never restarted and never
    // judged by the gates (SPEC §3: such a run is neither clean nor a crash).
    void forbid_restarts() { m_no_restarts = true; }
    // SIGKILL the current run's group now: its stop timeout ended, or (`deadline`) the
    // shutdown deadline came first, which its exit record then says (shutdown_kill).
    void kill_now(Actions& out, bool deadline = false);
    // SIGKILL a draining run's group now (shutdown deadline); nothing without one.
    void kill_draining_now(Actions& out) { stop_draining(Now{}, out, SIGKILL); }
    // One output line of `run`: into that run's tail, and, until the current run has
    // been judged, searched once with the output_matches patterns (SPEC §2). Lines of
    // an ended run (its leftovers in the group) go to its tail, not to the gates.
    void record_output(std::uint64_t run, Stream stream, std::string_view text, double wall);
    // The result of a ProbeAction. Results for another run, or that arrive in a state
    // where they mean nothing (a ready probe of a run already ready), are ignored.
    void on_probe_result(std::uint64_t run, ProbePurpose purpose, bool ok, Now now, Actions& out);
    // An sd_notify datagram from run `run` (the shell has checked the sender).
    void on_notify(std::uint64_t run, const NotifyMessage& message, Now now, Actions& out);
    // One measurement of `run`'s memory (SPEC §20, [health] memory_max): `bytes` from its
    // cgroup's memory.current (`cgroup`) or its processes' RSS. Over memory_max counts
    // one; the second in a row stops the run as KilledBy::memory (Emit liveness_kill with
    // the words of the log line), a crash; at or under it the count starts again. Only
    // for a starting or running run (not paused, not stopping) of a spec with memory_max.
    void on_memory(std::uint64_t run, std::uint64_t bytes, bool cgroup, Now now, Actions& out);
    // The operator freezes the current run (SPEC §15; service_pause.cpp). Only what
    // can_pause() allows; anything else (paused already included) does nothing.
    void pause(Now now, Actions& out);
    // The operator thaws a paused run; does nothing unless paused.
    void resume(Now now, Actions& out);

    // --- A scheduled job (SPEC §12; service_schedule.cpp) ----------------------------
    // The schedule grid's rows: these act only on a job with `schedule`. Between
    // episodes the job rests in stopped, done or failed, which state() reports as
    // `scheduled` while it is armed. Arms the job for `next` (nullopt: no time comes;
    // armed all the same).
    void arm(const std::optional<Tick>& next);
    // Disarms it: no more ticks; between episodes it is `stopped` (by the operator).
    void disarm();
    // The tick is due on the monotonic clock. A cron tick whose wall time has not come
    // (the clock was set back) waits on; else `next` is armed and an episode starts
    // with fresh counters, or, with one in progress, the tick is missed (counted,
    // Emit missed).
    void on_tick(Now now, Actions& out, const std::optional<Tick>& next);
    // An episode started by the operator (`start`): counted as the latest episode.
    void note_episode(Now now);
    // A reload that changed only the schedule: the running episode goes on.
    void replace_schedule(config::Schedule schedule) {
        m_spec.schedule = std::move(schedule);
        m_spec.stamp = {};  // no longer the parse it came from
    }
    // A reload that changed nothing but the log file keys (SPEC §18): the run goes on.
    void replace_log_file(config::OutOfLine<config::LogFileKeys> log) {
        m_spec.output.log = std::move(log);
        m_spec.stamp = {};
    }
    // A reload found `stamp`'s spec equal to this one, key by key: the next reload
    // needs no look (config::ParseStamp).
    void restamp(config::ParseStamp stamp) { m_spec.stamp = stamp; }
    bool has_schedule() const { return m_spec.schedule->enabled(); }
    const ScheduleRecord& schedule() const { return m_schedule ? *m_schedule : k_no_schedule; }
    std::optional<TimePoint> tick_due() const { return schedule().tick; }

    // --- Queries -----------------------------------------------------------------
    const config::ServiceSpec& spec() const { return m_spec; }
    const std::string& name() const { return m_spec.name; }
    std::size_t index() const { return m_index; }
    const std::optional<std::string>& group() const { return m_group; }
    State state() const;
    // The finer form of state(): the grids' columns (service_table.hpp).
    Phase phase() const { return m_phase; }
    bool desired_up() const { return m_desired_up; }
    // A process of the current run exists (starting, running or stopping), or a
    // draining run is still alive.
    bool has_process() const { return m_pid != 0 || !m_draining.empty(); }
    // The run a start_first restart replaces, while it is alive: its pid (0: none); the
    // latest such run when restarts came faster than the old runs ended.
    pid_t draining_pid() const { return m_draining.empty() ? 0 : m_draining.back().pid; }
    const Replacement* replacement() const { return m_replacement.get(); }
    // A start_first replacement is under way: the latest replaced run drains, not yet
    // told to stop, until the current run is ready; if the current run ends first, it
    // is the failed new run of the replacement, and the replaced run is restored.
    bool replacing() const {
        return !m_draining.empty() && !m_draining.back().stopping && !m_no_restarts;
    }
    pid_t pid() const { return m_pid; }
    std::uint64_t run() const { return m_run; }
    // Whether `pid` is the main process of run `run`, current or draining, and not yet
    // reported gone: a signal decided for it earlier may still be sent.
    bool signallable(std::uint64_t run, pid_t pid) const { return pid > 0 && pid_of(run) == pid; }
    // The main process of run `run` if it is the current or a draining run not yet
    // reported gone; 0 otherwise.
    pid_t pid_of(std::uint64_t run) const;
    bool ready() const { return m_ready; }
    // Launched and its spawn not reported yet: the shell holds a launch in flight.
    bool launch_in_flight() const {
        return (m_phase == Phase::starting || m_phase == Phase::cancelled) && m_pid == 0;
    }
    // `after` is satisfied by this service: ready, or ended cleanly (a one-shot job;
    // a running oneshot is never ready). `failed` leaves its dependents waiting.
    // A scheduled job satisfies them once one of its episodes has ended done.
    bool satisfies_dependents() const {
        return (m_phase == Phase::running && m_ready) || m_phase == Phase::done ||
               schedule().succeeded;
    }
    std::optional<TimePoint> next_deadline() const;
    // A run exists that pause() would freeze (or has frozen): starting with its pid
    // known, running, or paused; and no start_first replacement under way (both runs
    // share the service's cgroup).
    bool can_pause() const {
        return ((m_phase == Phase::starting && m_pid != 0) || m_phase == Phase::running ||
                m_phase == Phase::paused) &&
               m_draining.empty();
    }
    bool paused() const { return m_phase == Phase::paused; }
    // While paused: when the pause began (monotonic and wall), and what is left of
    // the run's deadlines, which resume() re-arms with it.
    struct PauseRecord {
        TimePoint since{};
        double since_wall = 0.0;
        bool starting = false;  // paused while starting: resumed into starting
        std::optional<Duration> run_timeout_left;
        std::optional<Duration> ready_timeout_left;
    };
    const PauseRecord* pause_record() const { return m_pause.get(); }
    // Liveness: nullopt without a [health] probe.
    std::optional<HealthStatus> health() const {
        return m_spec.health->enabled() ? std::optional(m_health) : std::nullopt;
    }
    int health_failures() const { return m_health_failures; }
    const std::optional<std::string>& notify_status() const { return m_notify_status; }

    int restarts() const { return m_restarts; }
    // Crashes since the counters were last made fresh (start, reload): a metric's counter.
    std::uint64_t crashes_counted() const { return m_crashes - m_crashes_at_reset; }
    // An automatic restart has been decided and the run not launched yet (the storm
    // guard holds such services).
    bool restart_pending() const;
    // The current wait is the daemon-wide storm pause, not this service's own.
    bool held_by_daemon() const { return m_phase == Phase::storm_hold; }
    int storm_pauses() const { return m_storm_pauses; }
    int liveness_kills() const { return m_liveness_kills; }
    // Runs the kernel's OOM killer killed in (ProcessExit::oom_killed), reset with the
    // other counters.
    int oom_kills() const { return m_oom_kills; }
    // Runs stopped over [health] memory_max (on_memory), reset with the other counters.
    int memory_kills() const { return m_memory_kills; }
    // The current run's measurements over memory_max in a row.
    int memory_over() const { return m_memory_over; }
    const std::optional<StopReason>& stopped_reason() const { return m_stopped; }
    const std::optional<ExitRecord>& last_exit() const { return m_last_exit; }
    const std::optional<std::string>& last_launch_error() const { return m_last_launch_error; }
    std::optional<TimePoint> started_at() const { return m_started; }
    double started_wall() const { return m_started_wall; }
    std::optional<TimePoint> restart_at() const { return due(Timer::restart); }
    const Decision& last_decision() const { return m_decision; }
    const PolicyState& policy_state() const { return m_policy; }

    // Output tails: the latest run's and the one before it.
    const OutputTail& tail() const { return m_tail; }
    const OutputTail& previous_tail() const { return m_previous_tail; }
    std::optional<std::uint64_t> tail_run() const { return m_tail_run; }
    std::optional<std::uint64_t> previous_tail_run() const { return m_previous_tail_run; }

    // Walks every field of the state for the upgrade's state file (persist.hpp); the
    // spec is not part of it: it comes from the configuration.
    template <class Archive>
    void persist(Archive& a);
    // After a loaded persist(): a probe attempt in flight at the hand-over did not
    // survive it, so its next attempt is due now.
    void resumed(Now now);

private:
    // Deadlines by kind; each is armed only in the phases that dispatch it (on_time).
    enum class Timer {
        kill,           // stopping: SIGKILL escalation
        run_timeout,    // starting, running: `timeout`
        ready_timeout,  // starting: [ready] timeout
        ready_probe,    // starting: next ready probe (unset while one is in flight)
        health_probe,   // running: next liveness probe (unset while one is in flight)
        watchdog,       // running: WATCHDOG=1 due
        restart,        // backoff, storm_pause, storm_hold: end of the wait
    };
    static constexpr std::size_t k_timers = 7;

    std::optional<TimePoint> due(Timer t) const { return m_timers[static_cast<std::size_t>(t)]; }
    OptionalTime& timer(Timer t) { return m_timers[static_cast<std::size_t>(t)]; }
    // Disarms `t` and returns true when it was due at `now`.
    bool fire(Timer t, Now now);
    // Leaves the paused phase for the one it was paused in, the cgroup thawed (Freeze
    // off), before a stop, a kill or an exit is handled as in that phase.
    void end_pause(Actions& out);

    void emit(Actions& out, Event event) const;
    Event event(EventType type, Now now) const;
    void rotate_tails();
    void complete_run(const RunResult& result, Now now, Actions& out, double u01, Outcome& outcome);
    void enter_ended(StopReason reason, bool clean, const std::string& why, Now now, Actions& out,
                     Outcome& outcome);
    // A run stopped on request has ended: relaunch, or stopped.
    void end_stopped_run(Now now, Actions& out, Outcome& outcome);
    void begin_stop(Now now, Actions& out, KilledBy by, std::optional<TimePoint> deadline);
    void reset_counters();
    void become_ready(Now now, Actions& out);
    void start_liveness(Now now);
    void health_result(bool ok, Now now, Actions& out);
    void clear_probes();
    // The current run is ready: a draining run gets its stop signal (start_first).
    void on_ready_reached(Now now, Actions& out);
    // The new run of a replacement ended before it was ready: the draining run is the
    // current one again. `why` is the failure the replacement records.
    void restore_draining(const std::string& why, Now now, Actions& out);
    // The draining run's main process exited.
    void end_draining(std::size_t i, const ProcessExit& status, Now now, Actions& out);
    // Sends `signo` to every draining run not yet stopping (SIGKILL: to every one).
    void stop_draining(Now now, Actions& out, int signo);
    void signal_draining(std::size_t i, Now now, Actions& out, int signo);

    config::ServiceSpec m_spec;
    std::size_t m_index;
    std::optional<std::string> m_group;

    Phase m_phase = Phase::stopped;
    bool m_desired_up = false;
    AfterStop m_after_stop = AfterStop::stay_stopped;
    OptionalTime m_cancel_deadline;  // cancelled: the stop's kill deadline
    std::array<OptionalTime, k_timers> m_timers;

    // The current run. m_last_run is the highest run number given out: a replacement
    // that fails makes an older run current again, and numbers are never reused.
    std::uint64_t m_run = 0;
    std::uint64_t m_last_run = 0;
    pid_t m_pid = 0;
    bool m_ready = false;
    KilledBy m_killing = KilledBy::none;  // why pkitd is ending the current run
    bool m_deadline_kill = false;         // its SIGKILL was the shutdown deadline's
    OptionalTime m_started;
    double m_started_wall = 0.0;

    // Readiness and liveness of the current run.
    HealthStatus m_health = HealthStatus::unknown;
    int m_health_failures = 0;
    std::optional<std::string> m_notify_status;

    // Counters and outcome (SPEC §5).
    int m_restarts = 0;
    std::uint64_t m_crashes = 0;
    std::uint64_t m_crashes_at_reset = 0;
    bool m_no_restarts = false;
    int m_storm_pauses = 0;
    int m_liveness_kills = 0;
    int m_oom_kills = 0;
    int m_memory_kills = 0;
    int m_memory_over = 0;  // the current run's measurements over memory_max in a row
    std::optional<StopReason> m_stopped;
    std::optional<ExitRecord> m_last_exit;
    std::optional<std::string> m_last_launch_error;
    PolicyState m_policy;
    Decision m_decision;

    OutputTail m_tail;
    OutputTail m_previous_tail;
    // The current run's lines that matched output_matches; searched while
    // m_match_output, from the launch until the run is judged or stopped. Allocated at
    // the first match: most services have no output pattern, or no match.
    std::unique_ptr<OutputMatches> m_output_matches;
    bool m_match_output = false;
    std::optional<std::uint64_t> m_tail_run;
    std::optional<std::uint64_t> m_previous_tail_run;

    // start_first: the runs being replaced (service_table.hpp), oldest first. Only the
    // last can be waiting for its successor to be ready; the ones before it are ending
    // (a restart came again before they had exited).
    struct DrainingRun {
        std::uint64_t run = 0;
        pid_t pid = 0;
        OptionalTime started;
        double started_wall = 0.0;
        bool stopping = false;  // its stop signal was sent
        OptionalTime kill;      // then: SIGKILL at this deadline
    };
    std::vector<DrainingRun> m_draining;
    std::unique_ptr<Replacement> m_replacement;  // the latest start_first restart's
    // Set exactly while paused: most services are never paused.
    std::unique_ptr<PauseRecord> m_pause;
    // A scheduled job's record, made when it is first armed: most services have none.
    std::unique_ptr<ScheduleRecord> m_schedule;
    ScheduleRecord& schedule_record() {
        if (!m_schedule) {
            m_schedule = std::make_unique<ScheduleRecord>();
        }
        return *m_schedule;
    }
};

}  // namespace pkit::core
