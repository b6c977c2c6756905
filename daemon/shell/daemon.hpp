#pragma once
// The imperative shell around the core Supervisor: one libuv loop, one wait point.
// Signals, SIGCHLD, pipe reads, the control socket and a single deadline timer turn
// into Supervisor inputs; the Supervisor's Actions turn into spawns, kill and
// writes. No restart policy lives here.
//
//   kernel ──SIGCHLD──▶ Reaper ──on_exit──▶ Supervisor ──Actions──▶ execute()
//     (5 ms of exits a turn; their spawns at the next)    │
//   pipes ──lines──▶ LineReader ──on_output──▶ tails      │  Spawn  → prepare_launch()
//   Spawner thread (clone) ──uv_async──▶ PendingLaunches  │    → Spawner (thread: clone)
//   report pipe ──▶ PendingLaunches ──on_spawned/on_launch_failed──▶ Supervisor
//   timer ──on_time──▶ Supervisor                         │  Signal → kill()
//   socket ──Request──▶ RequestHandler ──DaemonPort──▶    │  Emit   → log + events stream
//                                                         └  Exit   → leave the loop

#include <unistd.h>
#include <uv.h>

#include <cstdint>
#include <expected>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <random>
#include <string>
#include <vector>

#include "config/loader.hpp"
#include "config/model.hpp"
#include "daemon/core/supervisor.hpp"
#include "daemon/shell/cgroup/resources_pass.hpp"
#include "daemon/shell/cgroup/run_cgroups.hpp"
#include "daemon/shell/control/daemon_port.hpp"
#include "daemon/shell/io/background_load.hpp"
#include "daemon/shell/io/line_reader.hpp"
#include "daemon/shell/io/notify_socket.hpp"
#include "daemon/shell/io/output_writer.hpp"
#include "daemon/shell/io/systemd_notifier.hpp"
#include "daemon/shell/launch/pending_launch.hpp"
#include "daemon/shell/launch/reaper.hpp"
#include "daemon/shell/launch/run_records.hpp"
#include "daemon/shell/launch/signal_pace.hpp"
#include "daemon/shell/launch/spawner.hpp"
#include "daemon/shell/listen/listen_sockets.hpp"
#include "daemon/shell/memory/memory_watch.hpp"
#include "daemon/shell/probes/probe_runner.hpp"
#include "daemon/shell/upgrade/attempt.hpp"
#include "daemon/shell/upgrade/state_file.hpp"
#include "daemon/shell/uv_handle.hpp"

namespace pkit::shell {

enum class LogFormat { text, json };

struct DaemonOptions {
    std::string config_dir;
    std::string socket_path;
    bool socket_from_config = false;  // the path came from pkitd.toml's `socket`
    LogFormat log_format = LogFormat::text;
    // Why the socket is not the default one (an unprivileged pkitd), for the log; or empty.
    std::string socket_note;
    // NOTIFY_SOCKET and WATCHDOG_USEC of pkitd's own unit (SPEC §11 "Under systemd").
    SystemdEnvironment systemd;
    // What the start-up load parsed, for the reloads to reuse (null: every reload
    // parses every file).
    std::shared_ptr<config::LoadCache> load_cache;
    // Where pkitd reads its own cgroup and mounts from (SPEC §15).
    std::string proc_self = "/proc/self";
    // The running binary: what `upgrade` without a binary execs (SPEC §16).
    std::string binary;
    // After an upgrade in place: the daemon-wide part of the state the previous pkitd
    // handed over (pkitd --resume); the supervisor the Daemon is given holds the rest.
    std::optional<upgrade::DaemonFacts> resume;
    // The start-up load's warnings (config::LoadOptions::load_warnings), logged once
    // pkitd has started.
    std::vector<config::Diagnostic> load_warnings;
    // After an upgrade in place whose state could not be resumed (every service starts
    // afresh): what this pkitd still takes over, the control socket and its clients.
    std::optional<upgrade::Takeover> salvage;
};

class RequestHandler;
namespace http {
class Endpoint;
}

// The Daemon is the control room's DaemonPort (privately: only the RequestHandler it
// opens holds it that way). Every other room gets callbacks, and http::Endpoint the
// read-only getters below.
class Daemon : private DaemonPort {
public:
    Daemon(uv_loop_t* loop, config::Tree tree, DaemonOptions options);
    // After an upgrade in place: `supervisor` is built from the configuration and filled
    // from the handed-over state (upgrade::apply_state), nothing launched.
    Daemon(uv_loop_t* loop, core::Supervisor supervisor, DaemonOptions options);
    ~Daemon();

    Daemon(const Daemon&) = delete;
    Daemon& operator=(const Daemon&) = delete;

    // Runs until a shutdown or an escalation has stopped everything. Returns pkitd's
    // exit status (SPEC §1): 0, 1, 3 or 128+N.
    int run();

    // --- Read by the HTTP endpoint -------------------------------------------------
    // Plain getters: neither waits for anything. A run still between fork and exec (or
    // whose fork waits for a later turn, see spawn()) has no pid yet.
    const core::Supervisor& supervisor() const override { return m_supervisor; }
    core::Now now() const override;
    // pkitd's own log: one line on stderr, text or JSON.
    void log(std::string_view level, const std::string& message) override;
    const DaemonOptions& options() const { return m_options; }
    uv_loop_t* loop() const { return m_loop; }
    std::uint64_t orphans_reaped() const { return m_orphans; }
    double uptime() const;
    bool shutting_down() const { return m_supervisor.shutting_down(); }
    // Each of `services`' cgroup, for a read of their resources off the loop
    // (run_resources.hpp); empty without cgroups.
    std::vector<RunCgroupRead> run_cgroup_reads(const std::vector<std::size_t>& services) const;

private:
    // --- DaemonPort: what the control room asks for --------------------------------
    proto::DaemonStatus daemon_status() const override;
    void read_resources(ResourcesDone done) override;
    std::optional<proto::ResourceLimitsInfo> resource_limits(std::size_t service) const override;
    void command(const std::function<void(core::Supervisor&, core::Now)>& act) override;
    void wake_at(core::TimePoint deadline) override;
    // Re-reads and validates the whole configuration tree (SPEC §8): the files are read
    // and checked on a libuv worker thread (BackgroundLoad), then the valid tree is
    // applied on the loop in one go and `done` gets the outcome. Invalid: nothing
    // changes and the error holds every positioned problem, one a line. Logged either
    // way. Reloads asked for while a read is under way are coalesced: they share one
    // more read, started once the current one is applied, so each sees the files as
    // they were when it was asked. `done` is called from the loop, immediately when
    // pkitd is shutting down, and never after the Daemon is gone. SIGHUP calls it too.
    void reload(ReloadDone done) override;
    // `reload --dry-run` (daemon_reload_preview.cpp): a read of its own, on its own
    // BackgroundLoad, without the reload cache; previews asked for meanwhile share the
    // next read.
    void preview_reload(PreviewDone done) override;
    void request_shutdown(const std::string& why) override;
    std::optional<std::string> scale(const std::string& name, int count) override;
    // Upgrade in place (daemon_upgrade.cpp; the steps in upgrade/attempt.hpp): the
    // check and the trial of the new binary run as children whose exits the reaper hands
    // to on_upgrade_child(); then hand_over() writes the state and execs.
    void upgrade(std::string binary, UpgradeDone done) override;
    // Why pkitd cannot hand over now, if it cannot: launches in flight are resolved
    // first, so that a run being launched is waited for, not a reason.
    std::optional<std::string> busy_for_upgrade();
    bool on_upgrade_child(pid_t pid, int wait_status);
    void on_upgrade_checked(const upgrade::CheckChild::Outcome& outcome);
    void on_upgrade_config(const config::LoadResult& tree);
    void on_upgrade_tried(const upgrade::CheckChild::Outcome& outcome);
    void hand_over();
    // Ends the upgrade under way: logged, and its request answered with `why`.
    void fail_upgrade(const std::string& why);
    // The state document in `format`, as the hand-over would write it now; `kept` gets
    // every descriptor it names (with the clients' from format 3 on).
    std::string upgrade_state(int format, std::vector<int>& kept);
    upgrade::DaemonFacts hand_over_facts(std::vector<int>& kept);
    // The counts `scale` set (m_scaled), as the state carries them.
    std::vector<upgrade::ScaledFact> scaled_facts() const;
    // Rebuilds what the previous pkitd handed over beside the supervisor's state: its
    // sockets, run pipes and leftovers adopted. Before the reaper's first batch.
    void resume(upgrade::DaemonFacts& facts);
    // After an upgrade: the carried clients taken over and the upgrade's request
    // answered (m_takeover), before the first pump.
    void take_clients_over();

    // Spawns every deferred run, waits for the Spawner to have cloned every run submitted,
    // then resolves every launch in flight, blocking until each child has exec'd or failed.
    // When anything was resolved and no pump is under way, a pump follows at the next
    // turn. Returns how many. A command that acts on runs calls it first: the core can
    // stop or signal only a run whose pid it knows.
    std::size_t resolve_launches();
    // Executes the Supervisor's pending actions (and those they cause), answers the
    // control requests they decided, and re-arms the deadline timer. Call after every
    // Supervisor input.
    void pump();
    // exit_when = "all_done": shuts down once the Supervisor says nothing is left to run.
    void check_all_done();
    // Pumps once at the loop's next turn: launches that exec'd in the same turn (a
    // thousand at start-up) share one pump instead of one each, and the spawns deferred
    // (see spawn()) go on.
    void pump_soon();

    // The open output pipes of one run. The readers' callbacks capture only a pointer
    // to this entry and a stream, which std::function holds without allocating.
    struct RunPipes {
        Daemon* daemon;
        std::size_t service;
        std::uint64_t run;
        LineReader out;
        LineReader err;
        bool done() const { return !out.open() && !err.open(); }
    };
    struct Leftover {
        pid_t pgid;
        core::TimePoint kill_at;
        bool killed;
    };

    // Sets a flag for the lifetime of a scope (m_reaping, m_in_timer).
    class ScopedFlag {
    public:
        explicit ScopedFlag(bool& flag) : m_flag(flag) { m_flag = true; }
        ~ScopedFlag() { m_flag = false; }
        ScopedFlag(const ScopedFlag&) = delete;
        ScopedFlag& operator=(const ScopedFlag&) = delete;

    private:
        bool& m_flag;
    };

    void execute(const core::Action& action);
    // Queues a run in m_spawns_due, behind those waiting, and spawns what spawn_due()
    // allows now (prepared and submitted to the Spawner thread, which clones it): nothing
    // while reaping (a pump at the next turn), up to this turn's budget of spawns (the
    // rest at the next turn), up to k_spawns_in_flight with the Spawner (the rest when
    // its next outcome pumps). The
    // budget dates from forks on the loop (~3 ms of pkitd CPU each); with the Spawner a
    // spawn costs the loop its preparation only, and 4, 16 or no bound measured the same
    // in a crash storm (bench/README.md), so it stays as a bound on one turn's work.
    // The core sees no difference: the run is launched, its pid known later.
    void spawn(std::size_t service, std::uint64_t run);
    void spawn_now(std::size_t service, std::uint64_t run);
    // Spawns the runs deferred (m_spawns_due), in order, up to this turn's budget and the
    // Spawner's room (every one with `all`); returns how many.
    std::size_t spawn_due(bool all = false);
    // A launch's outcome (from PendingLaunches): feeds the Supervisor, without pumping.
    void on_launched(std::size_t service, std::uint64_t run,
                     std::expected<Launched, LaunchFailure> outcome);
    // resolve_launches() for one service only: spawns its deferred run, waits for the
    // Spawner's jobs of it, resolves its launch in flight. Returns how many.
    std::size_t resolve_launches_of(std::size_t service);
    // Feeds the Spawner's finished jobs to PendingLaunches (a clone failure as a failed
    // launch), then the held exits of their pids; once the Spawner is idle, a held exit
    // whose pid no launch claimed is an orphan's. Does not pump; returns how many exits
    // it handled.
    std::size_t take_spawned();
    // Whether `pid` is a launch's or a run's that pkitd knows of.
    bool knows_pid(pid_t pid) const;
    void attach_pipes(std::size_t service, RunPipes& pipes, int fd, core::Stream stream);
    void on_line(std::size_t service, std::uint64_t run, core::Stream stream,
                 std::string_view text);
    void drain_pipes(std::size_t service);
    void forward(const core::Service& service, core::Stream stream, std::string_view text,
                 double wall);
    void emit(const core::Event& event);
    void on_child(pid_t pid, int wait_status);
    // on_child's work for one exit, without the pump. With `may_hold`, a run's exit
    // waits for its cgroup to be empty (hold_exit).
    void handle_exit(pid_t pid, int wait_status, bool may_hold = true);
    void on_signal(int signo);
    void on_timer();
    void arm_timer();
    void cleanup_group(const core::CleanupGroupAction& action);
    void run_probe(const core::ProbeAction& action);
    void on_probe_result(std::size_t service, std::uint64_t run, core::ProbePurpose purpose,
                         bool ok, const std::string& detail);
    // Opens the sd_notify socket of a run that wants one; the NOTIFY_SOCKET to pass.
    std::optional<std::string> open_notify(std::size_t service, std::uint64_t run);
    // The run's main process exited: what served only that run goes.
    void end_run(std::size_t service);
    void prune_leftovers();
    // Forgets the pipes of `service`'s runs that have reached end of file.
    void sweep_pipes(std::size_t service);
    // The open pipes of `service`'s runs (the table grows when a reload adds services).
    std::vector<std::unique_ptr<RunPipes>>& pipes_of(std::size_t service);
    void kill_everything();
    void finish(int status);
    // --- cgroups (daemon_cgroup.cpp, SPEC §15) ----------------------------------------
    // Chooses and takes over pkitd's cgroup per `cgroups`; false when pkitd must exit 3.
    bool open_cgroups();
    // The cgroup directory a run of `service` joins: "" without cgroups; the reason
    // when it cannot be made.
    std::expected<std::string, std::string> run_cgroup(std::size_t service);
    // Writes `service`'s [resources] to its cgroup when they differ from what was last
    // written (or reports them not applied, without cgroups), and logs what was not.
    void apply_limits(std::size_t service);
    // Holds the exit of `service`'s run while its cgroup still holds processes; true
    // when held (delivered later by on_cgroup_empty).
    bool hold_exit(std::size_t service, pid_t pid, int wait_status);
    void on_cgroup_empty(std::size_t service, pid_t pid, int wait_status);
    // Whether the OOM killer killed in `service`'s cgroup during its current run (read
    // now, at the run's end; SPEC §15).
    bool run_oom_killed(std::size_t service) const;
    // A SignalAction, reaching the run's whole cgroup where it must.
    void signal_action(const core::SignalAction& action);
    void send_signal(const core::SignalAction& action);
    void expect_exit(std::size_t service, std::uint64_t run);
    // A FreezeAction: cgroup.freeze of the service's cgroup (SPEC §15 pause, resume).
    void freeze_action(const core::FreezeAction& action);
    void close_cgroups();
    // The reload steps (daemon_reload.cpp): a read for `waiting`, and its result applied.
    void start_reload(std::vector<ReloadDone> waiting);
    void finish_reload(config::LoadResult tree, const std::vector<ReloadDone>& waiting,
                       const std::vector<config::Diagnostic>& warnings);
    ReloadResult apply_reload(config::LoadResult tree);
    // Logs a load's warnings, each line beginning "FILE:LINE:COL: warning:" (SPEC §21).
    void log_load_warnings(const std::vector<config::Diagnostic>& warnings);
    // The preview's steps (daemon_reload_preview.cpp).
    void start_preview(std::vector<PreviewDone> waiting);
    PreviewResult preview_tree(config::LoadResult tree);
    // A new tree on the Supervisor (a reload's or a scale's), and the shell around it.
    // With `sockets` (a reload's), the [[listen]] sockets of the new tree are committed.
    core::ReloadOutcome apply_tree(config::Tree tree,
                                   std::optional<ListenSockets::Staged> sockets = std::nullopt);
    // Whether the shell still holds something of service slot `service` (its pipes, its
    // notify socket, a held exit, a paced signal, a request naming it): a reload does
    // not give the slot to another service meanwhile (Supervisor::reload_from).
    bool holds_slot(std::size_t service) const;
    // Scaling (daemon_scale.cpp): the running tree, and a loaded tree with the counts
    // `scale` set wherever the file's own `instances` is still what it was then.
    config::Tree running_tree() const;
    void keep_scaled_counts(config::Tree& tree);
    // Binds the start-up tree's [[listen]] sockets; false after logging each error.
    bool bind_listen_sockets();

    uv_loop_t* m_loop;
    DaemonOptions m_options;
    // Before the supervisor: destroyed after it, so no run outlives its sockets' owner.
    ListenSockets m_listen;
    core::Supervisor m_supervisor;
    std::mt19937_64 m_rng;
    core::TimePoint m_started;

    OutputWriter m_stdout;
    OutputWriter m_stderr;
    Reaper m_reaper;
    // Stop signals, a loop turn's budget at a time (signal_action).
    SignalPace m_signal_pace;
    Timer m_timer;
    std::vector<std::unique_ptr<UvHandle<uv_signal_t>>> m_signals;
    std::unique_ptr<RequestHandler> m_control;
    std::unique_ptr<http::Endpoint> m_http;  // pkitd.toml [http] (SPEC §11)
    ProbeRunner m_probes;
    SystemdNotifier m_systemd;
    PendingLaunches m_launches;
    // SOCKET.runs: which processes the runs are, for the next pkitd should this one die.
    RunRecords m_run_records;
    // After m_launches, which its outcomes feed: destroyed (and joined) first.
    Spawner m_spawner;
    // See pump_soon().
    NextTurn m_pump_soon;
    // prune_leftovers() once a turn, not once an exit: it asks the kernel about every
    // leftover group, and a shutdown of N services that each leave one had N exits.
    NextTurn m_prune_soon;
    // The current run's sd_notify socket, per service (null for most).
    std::vector<std::unique_ptr<NotifySocket>> m_notify;

    // Pipes of runs still open, per service: the current run's and those of ended runs
    // whose leftovers keep writing; removed at end of file.
    std::vector<std::vector<std::unique_ptr<RunPipes>>> m_pipes;
    // Services with a pipe at end of file since the last sweep.
    std::vector<std::size_t> m_pipes_to_sweep;
    std::vector<Leftover> m_leftovers;
    std::uint64_t m_orphans = 0;
    // `status --resources` (read_resources): the pass under way, those waiting for it
    // and those that asked since (the next pass).
    ResourcesPass* m_resources_pass = nullptr;
    std::vector<ResourcesDone> m_resources_waiting;
    void start_resources_pass();
    bool m_pumping = false;
    // Inside on_child, where a spawn waits for the next turn in m_spawns_due.
    bool m_reaping = false;
    std::vector<core::SpawnAction> m_spawns_due;
    // Exits reaped while the Spawner was busy, of pids not known yet: each is a child
    // whose outcome has not reached the loop, or an orphan (see take_spawned()).
    struct HeldExit {
        pid_t pid;
        int wait_status;
    };
    std::vector<HeldExit> m_held_exits;
    // Spawns left to this loop turn (see spawn()); refilled by the pump at the next turn.
    static constexpr std::size_t k_spawns_per_turn = 4;
    std::size_t m_spawn_budget = k_spawns_per_turn;
    // Launches prepared and handed to the Spawner whose outcome has not come back, at
    // most: the rest wait in m_spawns_due as (service, run) and are prepared when the
    // Spawner's outcomes make room. Without it a start-up of 1,000 would hold 1,000
    // prepared launches at once: their environments (twice pkitd's memory at start-up)
    // and three pipes each (6,000 fds beside the runs' 2,000).
    static constexpr std::size_t k_spawns_in_flight = 8;
    // Inside on_timer: see arm_timer().
    bool m_in_timer = false;
    // Deadlines the control room asked to be woken at (wake_at), earliest first; those
    // due are dropped when the timer fires.
    std::priority_queue<core::TimePoint, std::vector<core::TimePoint>, std::greater<>> m_wake_ups;
    std::optional<int> m_exit_status;
    // SPEC §13: the instance counts `scale` set, by file name, with the file's own count
    // at the time; a reload that finds the file's count changed drops the entry.
    struct Scaled {
        std::size_t file_count = 0;
        std::size_t count = 0;
    };
    std::map<std::string, Scaled, std::less<>> m_scaled;
    // The upgrade under way, if any.
    std::unique_ptr<upgrade::Attempt> m_upgrade;
    // After an upgrade in place, until run() takes them over: the clients carried.
    std::optional<upgrade::Takeover> m_takeover;
    // Reloads asked for while m_loading reads: served by the next read.
    std::vector<ReloadDone> m_reload_next;
    // pkitd's cgroup (SPEC §15): the choice made at start-up, and with cgroups the tree
    // and the services' cgroups (null without).
    CgroupChoice m_cgroup_choice;
    std::unique_ptr<CgroupTree> m_cgroup_tree;
    std::unique_ptr<RunCgroups> m_run_cgroups;
    // [health] memory_max (SPEC §20): the measurements, off the loop (memory/).
    std::unique_ptr<MemoryWatch> m_memory;
    // Per service launched so far: the [resources] last applied (or reported).
    std::vector<config::ResourceLimits> m_limits_applied;
    // Per service: what became of its [resources] when last applied, for `status`
    // (null: no key set, or not applied yet).
    std::vector<std::optional<proto::ResourceLimitsInfo>> m_limit_reports;
    // Previews asked for while m_previewing reads: served by the next read.
    std::vector<PreviewDone> m_preview_next;
    // The reload's read in the background; last, so that it is detached first.
    BackgroundLoad m_loading{m_loop};
    // `reload --dry-run`'s read, apart from the reload's.
    BackgroundLoad m_previewing{m_loop};
};

}  // namespace pkit::shell
