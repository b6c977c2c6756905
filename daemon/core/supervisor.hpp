#pragma once
// The Supervisor owns every Service machine and what lies between them: start order
// and `after` dependencies, the PID → run map for exits, shutdown in reverse
// dependency order within `shutdown_timeout`. Like Service it is pure: inputs are
// method calls with `now`, effects are Actions the shell drains with take_actions().
//
// Propagation goes through one settle() pass after every input, not recursion: it
// launches waiting services whose dependencies are satisfied and moves a shutdown on.
//
// An input costs what it touches, not what exists: every Service the Supervisor mutates
// goes through touch(), and only the touched ones are re-read into the indices that
// next_deadline(), on_time() and launch_ready() use (each service's deadline, the set of
// waiting services in start order). Idle services beside a restart add nothing to it.

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "config/model.hpp"
#include "daemon/core/service.hpp"
#include "daemon/core/tree.hpp"

namespace pkit::core {

class Supervisor {
public:
    // `random01` draws uniformly from [0, 1) for backoff jitter; tests pass a fixed one.
    Supervisor(config::Tree tree, std::function<double()> random01);
    // Draws from `random01` from now on (a supervisor filled by an upgrade's state is
    // built before the Daemon whose generator it then uses).
    void set_random(std::function<double()> random01) { m_random01 = std::move(random01); }

    // Wants every autostart service up and launches what can start; arms every
    // autostart scheduled job. `now` is pkitd's start, the epoch of "every" schedules.
    void start(Now now);
    // The zone cron schedules are read in (SPEC §12: TZ's); UTC until set.
    void set_zone(ZoneOffset offset) { m_zone = offset != nullptr ? offset : utc_offset; }

    // --- Shell inputs ---------------------------------------------------------------
    void on_spawned(std::size_t service, std::uint64_t run, pid_t pid, Now now);
    void on_launch_failed(std::size_t service, std::uint64_t run, const LaunchFailure& failure,
                          Now now);
    // A reaped child, its wait status decoded. Returns false when the PID is no run of
    // ours (an orphan).
    bool on_exit(pid_t pid, const ProcessExit& exit, Now now);
    void on_time(Now now);
    void on_probe_result(std::size_t service, std::uint64_t run, ProbePurpose purpose, bool ok,
                         Now now);
    void on_notify(std::size_t service, std::uint64_t run, const NotifyMessage& message, Now now);
    // A measurement of a run's memory (SPEC §20; Service::on_memory).
    void on_memory(std::size_t service, std::uint64_t run, std::uint64_t bytes, bool cgroup,
                   Now now);
    void on_output(std::size_t service, std::uint64_t run, Stream stream, std::string_view text,
                   double wall);

    // --- Operator commands ------------------------------------------------------------
    // start re-arms a stopped, done or failed service with fresh counters; stop marks it
    // stopped (not restarted until started); restart stops the current run (not a crash)
    // and starts a new one at once. None of them counts against restart limits.
    void start_service(std::size_t service, Now now);
    void stop_service(std::size_t service, Now now);
    void restart_service(std::size_t service, Now now);
    // Restarts `services` one at a time (SPEC §14): each waits until the one before has
    // a ready new run, or ends the roll when that run fails. Returns the roll's id for
    // roll(); rolls are kept for pkitd's life, one small record each.
    std::size_t restart_rolling(std::vector<std::size_t> services, Now now);
    // SPEC §15: freezes or thaws a service's run (Service::pause, resume; the shell has
    // checked that cgroups are used and that the service can_pause()). A pause while
    // shutting down does nothing: the stop is on its way.
    void pause_service(std::size_t service, Now now);
    void resume_service(std::size_t service, Now now);
    const Roll& roll(std::size_t id) const { return m_rolls[id]; }
    // Graceful shutdown (SPEC §7): dependents first, independent services concurrently.
    // `status` is pkitd's exit status once everything has stopped.
    void shutdown(Now now, int status = 0);
    // Reload (SPEC §8): applies a new, already validated tree. Added services start,
    // removed ones stop and disappear, changed ones (their definition or their group's)
    // restart with the new definition and fresh counters, unchanged ones are untouched.
    ReloadOutcome reload(config::Tree tree, Now now) { return reload_from(tree, now); }
    // The same, taking from `tree` only the specs it keeps: the rest stay there for the
    // caller to free (pkitd frees them off the loop). A service it adds takes a retired
    // slot that nothing holds any more (reusable_slots()) before a new one, so that
    // services added and removed again and again do not grow the tables; `caller_holds`,
    // indexed by slot (a shorter vector: the rest false), says where the caller still
    // holds something of a slot (pipes, a request that follows it), which keeps that slot
    // from being given away.
    ReloadOutcome reload_from(config::Tree& tree, Now now,
                              const std::vector<bool>& caller_holds = {});
    // What reload(tree) would do now, changing nothing (SPEC §21, `reload --dry-run`):
    // the same comparisons, each changed service with its differing keys and effect.
    ReloadPreview preview_reload(const config::Tree& tree) const;
    bool shutting_down() const { return m_shutting_down; }
    // `exit_when = "all_done"` (SPEC §12): once nothing can change without an operator
    // (no service starting, running, stopping, in backoff or a storm pause, or
    // scheduled; every waiting one behind a dependency that ended failed or stopped, or
    // behind one so stuck), pkitd's exit status: 1 if a service ended failed or is
    // left waiting, else 0. nullopt while something can still change.
    std::optional<int> all_done_status() const;
    // The daemon-wide storm guard (pkitd.toml [storm]).
    int daemon_storm_pauses() const { return m_daemon_storm_pauses; }
    std::optional<TimePoint> daemon_storm_until() const { return m_daemon_storm_until; }
    double daemon_storm_score(TimePoint now) const {
        return m_daemon_storm.value(now, m_daemon.storm.decay);
    }

    // --- Upgrade in place (SPEC §16; persist.hpp) ---------------------------------
    // Why the state cannot be handed over now (a shutdown, a reload or a group's
    // strategy in progress), or nullopt.
    std::optional<std::string> busy_for_upgrade() const;
    // Walks the daemon-wide state and every live service's, by name.
    template <class Archive>
    void persist(Archive& a);
    // After a loaded persist(): rebuilds the PID map and the indices, and re-arms what
    // was in flight and did not survive the exec (a probe's attempt).
    void resumed(Now now);

    // --- Queries ------------------------------------------------------------------
    std::optional<TimePoint> next_deadline() const;
    std::vector<Action> take_actions();
    // Service slots: the shell keys its state by their indices. A service removed by a
    // reload keeps its slot, retired, while anything may still name it (its process, a
    // launch, a reload or a roll pending, an action not taken, what the caller of
    // reload_from() holds); then a later reload may give the slot to a service it adds.
    // start_order() and find() skip retired slots.
    std::size_t size() const { return m_services.size(); }
    const Service& service(std::size_t i) const { return *m_services[i]; }
    bool retired(std::size_t i) const { return m_retired[i]; }
    const std::vector<Group>& groups() const { return m_groups; }
    std::optional<std::size_t> find(std::string_view name) const;
    // What a name in a request addresses (SPEC §13): the service of that name, else
    // for a NAME without "@", its instances NAME@1, NAME@2, ... in order; empty when
    // neither exists.
    std::vector<std::size_t> find_all(std::string_view name) const;
    // The service whose current run has main PID `pid`, if any.
    std::optional<std::size_t> service_of(pid_t pid) const;
    // Service indices in start order (SPEC §6: `after`, then name order).
    const std::vector<std::size_t>& start_order() const { return m_order; }
    const config::DaemonSpec& daemon_spec() const { return m_daemon; }
    // The wall times of a scheduled job's next `count` ticks while it is armed (`show`).
    std::vector<double> upcoming_ticks(std::size_t service, std::size_t count) const;
    // The names of the dependencies `service` is waiting for.
    std::vector<std::string> unsatisfied_dependencies(std::size_t service) const;

private:
    void build_graph();
    // The retired slots a reload may give to a new service (see service slots above),
    // highest first.
    std::vector<std::size_t> reusable_slots(const std::vector<bool>& caller_holds) const;
    void settle(Now now);
    void launch_ready(Now now);
    // The only way to a mutable Service: records it for refresh().
    Service& touch(std::size_t service);
    // Re-reads the touched services' deadlines and states into the indices.
    void refresh();
    // Rebuilds the indices from every service (after build_graph changed the order).
    void reindex();
    // The daemon-wide storm pause holds every pending restart until its end.
    void hold_for_daemon_storm(Now now);
    // What a run's end did (tree.cpp): a crash for the daemon-wide storm score, a
    // member's restart event, failure and escalation.
    void after_outcome(std::size_t service, const Outcome& outcome, Now now);
    void member_restarted(std::size_t group, std::size_t service, Now now);
    void fail_group(std::size_t group, const std::string& reason, Now now);
    void escalate(const std::string& reason, Now now);
    void settle_groups(Now now);
    bool group_busy(std::size_t service) const;
    // Reload (reload.cpp): replacements and removals wait for the old run to end.
    void settle_reload(Now now);
    void settle_shutdown(Now now);
    // An operator restart without settle(): start_first where the service has it.
    void restart_one(std::size_t service, Now now);
    // Rolling restarts (rolling.cpp): the next service of each roll whose current one
    // is through.
    void settle_rolls(Now now);
    // Stops `services` (in reverse start order) for the shutdown.
    void stop_for_shutdown(std::vector<std::size_t>& services, Now now);
    bool dependencies_satisfied(std::size_t service) const;
    // Autostart: a scheduled job is armed, any other service wanted up.
    void bring_up(std::size_t service, Now now);
    // A scheduled job's next tick after `now` (and after its last one).
    std::optional<Tick> next_tick_of(std::size_t service, Now now) const;
    double draw() { return m_random01 ? m_random01() : 0.5; }
    // Feeds one crash to the daemon-wide storm score.
    void note_crash(Now now);

    // The services' specs live in their Service; only pkitd.toml's part is kept here.
    config::DaemonSpec m_daemon;
    std::function<double()> m_random01;
    std::vector<std::unique_ptr<Service>> m_services;
    std::vector<bool> m_retired;
    // Looked up by a string_view without making a string of it.
    struct NameHash {
        using is_transparent = void;
        std::size_t operator()(std::string_view name) const {
            return std::hash<std::string_view>{}(name);
        }
    };
    std::unordered_map<std::string, std::size_t, NameHash, std::equal_to<>>
        m_by_name;                                       // live services only
    std::vector<std::optional<std::size_t>> m_group_of;  // service → group
    std::vector<Group> m_groups;
    RestartWindow m_root_window;  // root restarts of failed groups
    std::vector<PendingReload> m_reloads;
    std::vector<Roll> m_rolls;
    std::size_t m_rolls_active = 0;
    std::vector<std::vector<std::size_t>> m_dependencies;  // service → what it starts after
    std::vector<std::vector<std::size_t>> m_dependents;    // service → what starts after it
    std::vector<std::size_t> m_order;
    std::unordered_map<pid_t, std::pair<std::size_t, std::uint64_t>> m_runs;  // pid → run
    std::vector<Action> m_actions;
    TimePoint m_epoch{};  // pkitd's start: "every" schedules count from it
    ZoneOffset m_zone = utc_offset;

    StormScore m_daemon_storm;
    std::optional<TimePoint> m_daemon_storm_until;
    int m_daemon_storm_pauses = 0;

    bool m_shutting_down = false;
    bool m_exit_sent = false;
    int m_exit_status = 0;
    std::optional<TimePoint> m_shutdown_deadline;
    std::vector<bool> m_stop_sent;
    // Shutdown costs what it touches too: every service touched while shutting down is
    // looked at once by settle_shutdown() (m_shutdown_check). A service is down once its
    // stop was sent and it has no process; each down service counts once against its
    // dependencies' m_dependents_up, and one that reaches zero is stopped.
    std::vector<std::size_t> m_shutdown_check;
    std::vector<bool> m_is_shutdown_check;
    std::vector<std::size_t> m_dependents_up;  // service → dependents not down yet
    std::vector<bool> m_counted_down;
    std::vector<bool> m_had_process;  // as settle_shutdown() last saw it
    std::size_t m_with_process = 0;   // services with a process, likewise
    std::size_t m_unsent = 0;         // ordered services whose stop is not sent

    // The indices (see the header comment); every vector is sized like m_services
    // once build_graph() has run, which it does before a new slot is touched.
    static constexpr std::size_t not_ordered = static_cast<std::size_t>(-1);
    std::vector<std::optional<TimePoint>> m_deadline_of;  // as last read
    std::set<std::pair<TimePoint, std::size_t>> m_deadlines;
    std::vector<std::size_t> m_position;  // service → position in m_order (retired: none)
    std::set<std::size_t> m_waiting;      // m_order positions of the `waiting` services
    std::vector<std::size_t> m_touched;
    std::vector<bool> m_is_touched;
    // Services touched since the storm hold last looked at them: only they can have
    // become a restart to hold. A new pause end (m_held_until differs) holds them all.
    std::vector<std::size_t> m_hold_pending;
    std::vector<bool> m_is_hold_pending;
    std::optional<TimePoint> m_held_until;
};

}  // namespace pkit::core
