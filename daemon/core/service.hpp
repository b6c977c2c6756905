#pragma once
// The state machine of one service (SPEC §3, §5, §7). Events come in as method calls
// with an explicit `now`; effects go out as Actions appended to the caller's list.
// No clock reads, no I/O, no libuv: the Supervisor drives it and the shell executes.
//
//   state \ event  want_up     launch    spawned   exit(own)        time             stop
//   waiting        -           starting  -         -                -                stopped
//   starting       -           -         running*  gates            run timeout      stopping
//   running        -           -         -         gates            run timeout      stopping
//   stopping       (restart)   -         -         stopped|waiting  SIGKILL          (tighten)
//   backoff        waiting     -         -         -                waiting          stopped
//   storm_pause    waiting     -         -         -                waiting          stopped
//   stopped        waiting     -         -         -                -                -
//   done / failed  waiting     -         -         -                -                -
//
//   * running once ready; without [ready] a run is ready as soon as its exec succeeded.
//     A oneshot job (type = "oneshot") is running but never ready while its run lasts:
//     it satisfies its dependents only once it is done.
//   "gates": SPEC §3's order decides done | failed | backoff | storm_pause.
//   A launch failure is a completed run that never had a process: it goes through the
//   gates too. An exit or a timer for a run other than the current one is ignored.
//
// `desired` (up/down) is kept apart from the state: "stopped by the operator" is
// desired = down, and a run being stopped knows what follows its exit (`m_after_stop`).

#include <cstdint>
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

class Service {
public:
    Service(config::ServiceSpec spec, std::size_t index, std::optional<std::string> group);

    // --- Inputs ------------------------------------------------------------------
    // The operator (or autostart) wants the service up. `fresh` clears the counters
    // (a start of a stopped, done or failed service). Leaves it `waiting`: the
    // Supervisor launches it once its dependencies are satisfied.
    void want_up(Now now, Actions& out, bool fresh);
    // Starts run `run() + 1` (SpawnAction). Only from `waiting`.
    void launch(Now now, Actions& out);
    void on_spawned(std::uint64_t run, pid_t pid, Now now, Actions& out);
    void on_launch_failed(std::uint64_t run, const LaunchFailure& failure, Now now, Actions& out,
                          double u01);
    // The main process of `run` exited with `wait_status` (as from waitpid).
    void on_exit(std::uint64_t run, int wait_status, Now now, Actions& out, double u01);
    // Fires whatever deadline is due at `now`.
    void on_time(Now now, Actions& out);
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
    void on_probe_result(std::uint64_t run, ProbePurpose purpose, bool ok, Now now, Actions& out);
    // An sd_notify datagram from run `run` (the shell has checked the sender).
    void on_notify(std::uint64_t run, const NotifyMessage& message, Now now, Actions& out);

    // --- Queries -----------------------------------------------------------------
    const config::ServiceSpec& spec() const { return m_spec; }
    const std::string& name() const { return m_spec.name; }
    std::size_t index() const { return m_index; }
    const std::optional<std::string>& group() const { return m_group; }
    State state() const { return m_state; }
    bool desired_up() const { return m_desired_up; }
    // A process of the current run exists (starting, running or stopping).
    bool has_process() const { return m_pid != 0; }
    pid_t pid() const { return m_pid; }
    std::uint64_t run() const { return m_run; }
    bool ready() const { return m_ready; }
    // `after` is satisfied by this service: ready, or ended cleanly (a one-shot job;
    // a running oneshot is never ready). `failed` leaves its dependents waiting.
    bool satisfies_dependents() const {
        return (m_state == State::running && m_ready) || m_state == State::done;
    }
    std::optional<TimePoint> next_deadline() const;
    // Liveness: nullopt without a [health] probe.
    std::optional<HealthStatus> health() const {
        return m_spec.health.enabled() ? std::optional(m_health) : std::nullopt;
    }
    int health_failures() const { return m_health_failures; }
    const std::optional<std::string>& notify_status() const { return m_notify_status; }

    int restarts() const { return m_restarts; }
    // Crashes over the service's life: the Supervisor feeds each new one to the
    // daemon-wide storm score.
    std::uint64_t crashes() const { return m_crashes; }
    // Crashes since the counters were last made fresh (start, reload): a metric's counter.
    std::uint64_t crashes_counted() const { return m_crashes - m_crashes_at_reset; }
    // An automatic restart has been decided and the run not launched yet.
    bool restart_pending() const { return m_restart_pending; }
    // The current wait is the daemon-wide storm pause, not this service's own.
    bool held_by_daemon() const { return m_held_by_daemon; }
    int storm_pauses() const { return m_storm_pauses; }
    int liveness_kills() const { return m_liveness_kills; }
    const std::optional<StopReason>& stopped_reason() const { return m_stopped; }
    const std::optional<ExitRecord>& last_exit() const { return m_last_exit; }
    const std::optional<std::string>& last_launch_error() const { return m_last_launch_error; }
    std::optional<TimePoint> started_at() const { return m_started; }
    double started_wall() const { return m_started_wall; }
    std::optional<TimePoint> restart_at() const { return m_restart_at; }
    const Decision& last_decision() const { return m_decision; }
    const PolicyState& policy_state() const { return m_policy; }

    // Output tails: the latest run's and the one before it.
    const OutputTail& tail() const { return m_tail; }
    const OutputTail& previous_tail() const { return m_previous_tail; }
    std::optional<std::uint64_t> tail_run() const { return m_tail_run; }
    std::optional<std::uint64_t> previous_tail_run() const { return m_previous_tail_run; }

private:
    void emit(Actions& out, Event event) const;
    Event event(EventType type, Now now) const;
    void rotate_tails();
    void complete_run(const RunResult& result, Now now, Actions& out, double u01);
    void enter_ended(StopReason reason, bool clean, const std::string& why, Now now, Actions& out);
    void begin_stop(Now now, Actions& out, KilledBy by, std::optional<TimePoint> deadline);
    void reset_counters();
    void become_ready(Now now, Actions& out);
    void start_liveness(Now now);
    void health_result(bool ok, Now now, Actions& out);
    void clear_probes();

    config::ServiceSpec m_spec;
    std::size_t m_index;
    std::optional<std::string> m_group;

    State m_state = State::stopped;
    bool m_desired_up = false;
    AfterStop m_after_stop = AfterStop::stay_stopped;

    // The current run.
    std::uint64_t m_run = 0;
    pid_t m_pid = 0;
    bool m_ready = false;
    KilledBy m_killing = KilledBy::none;  // why pkitd is ending the current run
    std::optional<TimePoint> m_started;
    double m_started_wall = 0.0;
    std::optional<TimePoint> m_timeout_at;  // run timeout
    std::optional<TimePoint> m_kill_at;     // SIGKILL escalation while stopping
    std::optional<TimePoint> m_restart_at;  // end of backoff or storm pause

    // Readiness and liveness of the current run.
    std::optional<TimePoint> m_ready_deadline;
    std::optional<TimePoint> m_next_ready_probe;   // unset while an attempt is in flight
    std::optional<TimePoint> m_next_health_probe;  // unset while an attempt is in flight
    std::optional<TimePoint> m_watchdog_deadline;
    HealthStatus m_health = HealthStatus::unknown;
    int m_health_failures = 0;
    std::optional<std::string> m_notify_status;

    // Counters and outcome (SPEC §5).
    int m_restarts = 0;
    std::uint64_t m_crashes = 0;
    std::uint64_t m_crashes_at_reset = 0;
    bool m_restart_pending = false;
    bool m_held_by_daemon = false;
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
    // m_match_output, from the launch until the run is judged or stopped.
    OutputMatches m_output_matches;
    bool m_match_output = false;
    std::optional<std::uint64_t> m_tail_run;
    std::optional<std::uint64_t> m_previous_tail_run;
};

}  // namespace pkit::core
