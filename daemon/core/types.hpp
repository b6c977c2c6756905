#pragma once
// Vocabulary of the functional core: time as a value, states, exit records, the
// events the core reports and the actions it asks the shell to perform.
// Nothing here reads a clock: every function of the core takes `Now` as a parameter.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "config/model.hpp"

namespace pkit::core {

using config::Duration;
using TimePoint = std::chrono::steady_clock::time_point;

// The moment an input happened: monotonic time for every decision, wall time
// (unix seconds) only for display.
struct Now {
    TimePoint mono{};
    double wall = 0.0;
    Now plus(Duration d) const {
        return {mono + d, wall + std::chrono::duration<double>(d).count()};
    }
};

// A TimePoint or none, in the space of one (half an optional's): TimePoint::min()
// stands for none, which no deadline or start time is (each is a `now` plus a
// non-negative duration). Converts to and from std::optional<TimePoint>. A Service keeps
// nine of them: with a thousand services, 72 KB less.
class OptionalTime {
public:
    OptionalTime() = default;
    OptionalTime(std::nullopt_t) {}
    OptionalTime(TimePoint at) : m_at(at) {}
    OptionalTime(std::optional<TimePoint> at) : m_at(at.value_or(k_none)) {}

    bool has_value() const { return m_at != k_none; }
    explicit operator bool() const { return has_value(); }
    TimePoint operator*() const { return m_at; }
    void reset() { m_at = k_none; }
    operator std::optional<TimePoint>() const {
        return has_value() ? std::optional(m_at) : std::nullopt;
    }

private:
    static constexpr TimePoint k_none = TimePoint::min();
    TimePoint m_at = k_none;
};

enum class State {
    waiting,
    starting,
    running,
    stopping,
    backoff,
    storm_pause,
    stopped,
    done,
    failed,
    scheduled,  // SPEC §12: a job between episodes, armed for its next tick
    paused,     // SPEC §15: its run's cgroup frozen by the operator (pause)
};

// Why supervision of a service ended (SPEC §5 `stopped`).
enum class StopReason {
    policy_satisfied,
    predicate,
    restarts_exhausted,
    gave_up,
    unhealthy,
    operator_
};

// Why pkitd itself ended a run (SPEC §5 `last_exit.killed_by`).
// `memory`: over [health] memory_max at two measurements in a row (SPEC §20).
enum class KilledBy { none, liveness, timeout, ready_timeout, operator_, memory };

enum class Stream { stdout_, stderr_ };

// How a main process ended, decoded from its wait status by the shell: exactly one
// of the two is set (an unknown status leaves both unset).
struct ProcessExit {
    std::optional<int> code;    // exited with this code
    std::optional<int> signal;  // killed by this signal
    // The kernel's OOM killer killed a process of the run's cgroup while it ran (the
    // shell compares memory.events' oom_kill at its start and end; SPEC §15).
    bool oom_killed = false;
};

// How a run ended, as reported in `last_exit`.
struct ExitRecord {
    std::optional<int> code;    // set when the main process exited
    std::optional<int> signal;  // set when it was killed by a signal
    Duration duration{};
    double at = 0.0;  // wall time of the exit
    bool timed_out = false;
    KilledBy killed_by = KilledBy::none;
    bool oom_killed = false;  // see ProcessExit
    // pkitd's SIGKILL came at the shutdown deadline, not at the end of the stop timeout
    // (for the log's words; not in the protocol, not kept across an upgrade).
    bool shutdown_kill = false;
};

// The fields of one sd_notify datagram that pkitd acts on (SPEC §3).
struct NotifyMessage {
    bool ready = false;
    std::optional<std::string> status;
    bool watchdog = false;
    std::optional<std::uint64_t> extend_timeout_usec;

    // True when the message carries nothing pkit acts on (STOPPING=1, BARRIER=1...).
    bool empty() const { return !ready && !status && !watchdog && !extend_timeout_usec; }
};

enum class HealthStatus { unknown, healthy, unhealthy };

// A launch that never became a process.
struct LaunchFailure {
    config::LaunchError kind = config::LaunchError::other;
    std::string message;  // "not_found: /usr/bin/x: No such file or directory"
};

enum class EventType {
    started,
    ready,
    exited,
    restarting,
    storm_pause,
    liveness_kill,
    health,
    stopped,
    gave_up,
    restarts_exhausted,
    group_failed,
    escalated,
    reload,
    missed,     // a scheduled job's tick came while an episode ran
    paused,     // the operator froze the run (SPEC §15)
    resumed,    // the operator thawed it
    log_error,  // the shell's: a log file failed, its lines are dropped (SPEC §18)
};

// One lifecycle event: pkitd's log line and the `events` stream are both made from it.
struct Event {
    EventType type = EventType::started;
    std::string service;               // empty for daemon-wide events
    std::optional<std::string> group;  // the service's group, or the failed group
    double at = 0.0;
    std::uint64_t run = 0;
    pid_t pid = 0;                              // started
    std::optional<ExitRecord> exit;             // exited
    std::optional<LaunchFailure> launch_error;  // exited without a process
    Duration delay{};                           // restarting, storm_pause
    int restart = 0;                            // restarting: the restart's number
    std::string reason;                         // stopped, gave_up, ...: plain words
};

// --- Actions: what the core asks the shell to do ---------------------------------

// Fork and exec run `run` of service `service`; the shell answers with
// Supervisor::on_spawned or Supervisor::on_launch_failed.
struct SpawnAction {
    std::size_t service;
    std::uint64_t run;
};

// Send `signal` to the run's process group (or main PID). With `then_cont`, SIGCONT goes
// with it so a stopped process can act on it: after it, or before a stop-class signal
// (SIGTSTP, SIGTTIN, SIGTTOU), which SIGCONT would discard (SPEC §7).
struct SignalAction {
    std::size_t service;
    std::uint64_t run;
    pid_t pid;
    int signal;
    bool group;
    bool then_cont;
};

// The main process of a group-mode run exited: what remains of its process group
// gets `signal` now and SIGKILL after `grace`. The shell tracks such groups until
// they are empty (pkitd is their subreaper) and kills them on shutdown.
struct CleanupGroupAction {
    std::size_t service;
    pid_t pgid;
    int signal;
    Duration grace;
};

// What a probe is for: readiness of a starting run, or liveness of a ready one.
enum class ProbePurpose { ready, health };

// Run one probe attempt of `service`'s [ready] or [health] spec for run `run`; the
// shell answers with Supervisor::on_probe_result, or not at all if the run has ended
// (the core ignores results for other runs anyway).
struct ProbeAction {
    std::size_t service;
    std::uint64_t run;
    ProbePurpose purpose;
};

struct EmitAction {
    Event event;
};

// Freeze (`frozen`) or thaw the cgroup of `service`'s run `run` (SPEC §15: pause and
// resume; cgroup.freeze). The core asks for a thaw whenever a paused run is stopped,
// killed or has exited, so a cgroup is never left frozen under the next run.
struct FreezeAction {
    std::size_t service;
    std::uint64_t run;
    bool frozen;
};

// Everything is stopped after a shutdown or an escalation: the daemon exits.
struct ExitAction {
    int status;
};

using Action = std::variant<SpawnAction, SignalAction, CleanupGroupAction, ProbeAction, EmitAction,
                            ExitAction, FreezeAction>;

std::string_view to_string(State);
std::string_view to_string(StopReason);
std::string_view to_string(KilledBy);
std::string_view to_string(EventType);
std::string_view to_string(Stream);
std::string_view to_string(HealthStatus);

}  // namespace pkit::core
