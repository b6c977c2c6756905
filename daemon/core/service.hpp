#pragma once
// The state machine of one service (SPEC §3, §5, §7). Events come in as method calls
// with an explicit `now`; effects go out as Actions appended to the caller's list, and
// what the Supervisor must know of an input's effect comes back as an Outcome.
// No clock reads, no I/O, no libuv: the Supervisor drives it and the shell executes.
//
// Phases (the private, finer form of SPEC §3's State that state() reports):
//   waiting       wanted up; the Supervisor launches it once `after` is satisfied
//   restart_due   waiting, for an automatic restart whose delay is over
//   starting      launched; pid known once spawned; ready probes/notify pending
//   cancelled     starting, but a stop came before the spawn was reported (pid 0)
//   running       spawned (and ready, unless a [ready] or a oneshot says otherwise)
//   stopping      its stop signal sent; SIGKILL at the `kill` deadline
//   backoff       an automatic restart decided, waiting out its delay
//   storm_pause   the same, delayed by this service's own storm guard
//   storm_hold    the same, held by the daemon-wide storm guard (state storm_pause)
//   stopped / done / failed   supervision ended (SPEC §5 `stopped` says why)
//
// Every input, by phase ("-": ignored; [x] a deadline; → the next phase):
//   input              in                       transition and actions
//   want_up            stopped/done/failed      → waiting (fresh: counters reset)
//                      backoff/storm_*          → waiting (the rest of the wait skipped)
//                      stopping/cancelled       after the exit: relaunch
//   launch             waiting/restart_due      → starting; Spawn
//   spawned            starting                 Emit started; [run_timeout]; → running
//                                               (no [ready]: ready; oneshot: not ready)
//                                               or [ready_timeout] [ready_probe]
//                      cancelled                Emit started; → stopping (operator)
//   launch failed      starting                 Emit exited; the gates (below)
//                      cancelled                Emit exited; → stopped | waiting
//   exit               stopping by operator,    Emit exited [Cleanup]; → stopped
//                      or shutting down           (Emit stopped) | waiting (relaunch)
//                      starting/running/        Emit exited [Cleanup]; the gates:
//                      stopping (pkitd's kill)    → done | failed (Emit stopped, gave_up,
//                                                 restarts_exhausted) | backoff |
//                                                 storm_pause (Emit storm_pause) |
//                                                 restart_due (no delay); Emit restarting
//   probe (ready)      starting                 ok: ready, → running (Emit ready);
//                                               failed: [ready_probe] again
//   probe (health)     running                  health streak; `failures` in a row:
//                                               Emit liveness_kill, → stopping
//   notify             starting                 READY=1: as a ready probe's success;
//                                               EXTEND_TIMEOUT_USEC: [ready_timeout] later
//                      running                  WATCHDOG=1: [watchdog] again, healthy
//   deadline           starting                 [run_timeout], [ready_timeout]: → stopping;
//                                               [ready_probe]: Probe
//                      running                  [run_timeout]: → stopping; [health_probe]:
//                                               Probe; [watchdog]: one failed probe
//                      stopping                 [kill]: SIGKILL
//                      backoff/storm_*          [restart]: → restart_due
//   stop (operator)    starting/running         Signal; → stopping; [kill]
//                      starting with pid 0      → cancelled (acted on when spawned/failed)
//                      stopping                 a pkitd kill becomes an operator stop
//                      waiting/restart_due/     → stopped (Emit stopped), or waiting for
//                      backoff/storm_*            a restart (after = relaunch)
//                      stopped/done/failed      restart: as want_up (fresh)
//   group restart      starting/running (pid)   counted in restarts; as a restart
//   root restart       any                      counted; fresh policy; a process is
//                                               stopped and relaunched, else → waiting
//   reload             no process               new spec, fresh counters
//   shutdown           any                      no restart, no gates from now on; then
//                                               stop (after = shutdown), with the deadline
//   kill_now           a process                SIGKILL; → stopping (no crash follows)
//   storm hold         restart_due/backoff/     → storm_hold [restart] = the pause's end
//                      storm_pause                (or storm_pause if its own ends later)
//
//   "The gates": SPEC §3's order decides done | failed | backoff | storm_pause. A
//   launch failure is a completed run that never had a process: it goes through the
//   gates too. An exit, probe result or notify for a run other than the current one is
//   ignored. Each deadline is armed only in the phases that dispatch it above.
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
#include "daemon/core/types.hpp"

namespace pkit::core {

using Actions = std::vector<Action>;

// What happens once a run that pkitd is stopping has exited.
enum class AfterStop { stay_stopped, relaunch, shutdown };

// What an input did that the Supervisor acts on (the storm score, the group's
// intensity and strategy, escalation), so that it never compares counters.
struct Outcome {
    struct Ended {
        StopReason reason;
        State state;  // stopped, done or failed
    };
    bool crashed = false;             // a run ended as a crash (SPEC §3)
    std::optional<Duration> restart;  // an automatic restart was decided, after this delay
    std::optional<Ended> ended;       // supervision ended
    bool ready_changed = false;       // the run became ready, or a ready run ended
};

class Service {
public:
    Service(config::ServiceSpec spec, std::size_t index, std::optional<std::string> group);

    // --- Inputs (see the table above) ----------------------------------------------
    // The operator (or autostart) wants the service up. `fresh` clears the counters
    // (a start of a stopped, done or failed service). Leaves it `waiting`: the
    // Supervisor launches it once its dependencies are satisfied.
    void want_up(Now now, Actions& out, bool fresh);
    // Starts run `run() + 1` (SpawnAction). Only from `waiting`.
    void launch(Now now, Actions& out);
    Outcome on_spawned(std::uint64_t run, pid_t pid, Now now, Actions& out);
    Outcome on_launch_failed(std::uint64_t run, const LaunchFailure& failure, Now now, Actions& out,
                             double u01);
    // The main process of `run` ended (the shell decoded its wait status). With a
    // `cleanup_by` (the shutdown deadline), what remains of its group is killed by then.
    Outcome on_exit(std::uint64_t run, const ProcessExit& exit, Now now, Actions& out, double u01,
                    std::optional<TimePoint> cleanup_by = std::nullopt);
    // Fires whatever deadline of the current phase is due at `now`.
    Outcome on_time(Now now, Actions& out);
    // Stops the service: a run gets its stop signal, a pending restart is cancelled.
    // `deadline` (shutdown_timeout) caps the SIGKILL escalation.
    void stop(Now now, Actions& out, AfterStop after, std::optional<TimePoint> deadline);
    // The daemon-wide storm guard holds a pending automatic restart until `until`
    // (state storm_pause). Does nothing unless a restart is pending.
    void hold_until(TimePoint until);
    // The group's strategy restarts this sibling (SPEC §6): a run in progress is
    // stopped (not a crash) and a fresh one started; counted in `restarts`. Returns
    // false when there was no run to restart.
    bool restart_by_group(Now now, Actions& out);
    // A root restart of the failed group: counted in `restarts`, fresh policy state,
    // and wanted up again.
    void restart_by_root(Now now, Actions& out);
    // Reload: takes a new definition while no run exists. Counters start afresh; `run`
    // keeps counting and the tails stay.
    void replace_spec(config::ServiceSpec spec, std::optional<std::string> group);
    void set_group(std::optional<std::string> group) { m_group = std::move(group); }
    // pkitd is shutting down: a run that ends from now on is never restarted and never
    // judged by the gates (SPEC §3: such a run is neither clean nor a crash).
    void forbid_restarts() { m_no_restarts = true; }
    // SIGKILL the current run's group now (shutdown deadline).
    void kill_now(Actions& out);
    // One output line of `run`: into that run's tail, and, until the current run has
    // been judged, searched once with the output_matches patterns (SPEC §2). Lines of
    // an ended run (its leftovers in the group) go to its tail, not to the gates.
    void record_output(std::uint64_t run, Stream stream, std::string_view text, double wall);
    // The result of a ProbeAction. Results for another run, or that arrive in a state
    // where they mean nothing (a ready probe of a run already ready), are ignored.
    Outcome on_probe_result(std::uint64_t run, ProbePurpose purpose, bool ok, Now now,
                            Actions& out);
    // An sd_notify datagram from run `run` (the shell has checked the sender).
    Outcome on_notify(std::uint64_t run, const NotifyMessage& message, Now now, Actions& out);

    // --- Queries -----------------------------------------------------------------
    const config::ServiceSpec& spec() const { return m_spec; }
    const std::string& name() const { return m_spec.name; }
    std::size_t index() const { return m_index; }
    const std::optional<std::string>& group() const { return m_group; }
    State state() const;
    bool desired_up() const { return m_desired_up; }
    // A process of the current run exists (starting, running or stopping).
    bool has_process() const { return m_pid != 0; }
    pid_t pid() const { return m_pid; }
    std::uint64_t run() const { return m_run; }
    bool ready() const { return m_ready; }
    // `after` is satisfied by this service: ready, or ended cleanly (a one-shot job;
    // a running oneshot is never ready). `failed` leaves its dependents waiting.
    bool satisfies_dependents() const {
        return (m_phase == Phase::running && m_ready) || m_phase == Phase::done;
    }
    std::optional<TimePoint> next_deadline() const;
    // Liveness: nullopt without a [health] probe.
    std::optional<HealthStatus> health() const {
        return m_spec.health->enabled() ? std::optional(m_health) : std::nullopt;
    }
    int health_failures() const { return m_health_failures; }
    const std::optional<std::string>& notify_status() const { return m_notify_status; }

    int restarts() const { return m_restarts; }
    // Crashes since the counters were last made fresh (start, reload): a metric's counter.
    std::uint64_t crashes_counted() const { return m_crashes - m_crashes_at_reset; }
    // An automatic restart has been decided and the run not launched yet.
    bool restart_pending() const;
    // The current wait is the daemon-wide storm pause, not this service's own.
    bool held_by_daemon() const { return m_phase == Phase::storm_hold; }
    int storm_pauses() const { return m_storm_pauses; }
    int liveness_kills() const { return m_liveness_kills; }
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

private:
    enum class Phase {
        waiting,
        restart_due,
        starting,
        cancelled,
        running,
        stopping,
        backoff,
        storm_pause,
        storm_hold,
        stopped,
        done,
        failed
    };
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
    bool restart_phase() const;

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
    void become_ready(Now now, Actions& out, Outcome& outcome);
    void start_liveness(Now now);
    void health_result(bool ok, Now now, Actions& out);
    void clear_probes();

    config::ServiceSpec m_spec;
    std::size_t m_index;
    std::optional<std::string> m_group;

    Phase m_phase = Phase::stopped;
    bool m_desired_up = false;
    AfterStop m_after_stop = AfterStop::stay_stopped;
    OptionalTime m_cancel_deadline;  // cancelled: the stop's kill deadline
    std::array<OptionalTime, k_timers> m_timers;

    // The current run.
    std::uint64_t m_run = 0;
    pid_t m_pid = 0;
    bool m_ready = false;
    KilledBy m_killing = KilledBy::none;  // why pkitd is ending the current run
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
};

}  // namespace pkit::core
