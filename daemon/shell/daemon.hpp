#pragma once
// The imperative shell around the core Supervisor: one libuv loop, one wait point. The
// Daemon keeps the loop, the pump and the dispatch of the core's Actions; each
// capability's state lives in an owner in a room of its own, reached through what it
// was given (ARCHITECTURE.md, "The shell's rooms"). Inputs go down once:
//   SIGCHLD ─▶ handle_exit ─▶ ExitOwners in order ─▶ Supervisor::on_exit
//   lines, launches, notify, probes, timer ─▶ an owner's callback ─▶ one Supervisor input
//   requests ─▶ DaemonPort (RunCommands) / HttpPort ─▶ reads, inputs, guarded signals
// and every input is followed by pump(): each Action to the owner that does it.

#include <uv.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "config/model.hpp"
#include "daemon/core/supervisor.hpp"
#include "daemon/shell/cgroup/cgroups.hpp"
#include "daemon/shell/child_exit.hpp"
#include "daemon/shell/control/daemon_port.hpp"
#include "daemon/shell/daemon_options.hpp"
#include "daemon/shell/deadlines/deadlines.hpp"
#include "daemon/shell/exit_owners.hpp"
#include "daemon/shell/http/http_port.hpp"
#include "daemon/shell/io/daemon_log.hpp"
#include "daemon/shell/io/systemd_notifier.hpp"
#include "daemon/shell/launch/reaper.hpp"
#include "daemon/shell/launch/run_records.hpp"
#include "daemon/shell/launch/signal_pace.hpp"
#include "daemon/shell/listen/listen_sockets.hpp"
#include "daemon/shell/logfile/service_logs.hpp"
#include "daemon/shell/memory/memory_watch.hpp"
#include "daemon/shell/probes/run_probes.hpp"
#include "daemon/shell/reload/reloader.hpp"
#include "daemon/shell/runs/leftovers.hpp"
#include "daemon/shell/runs/run_notify.hpp"
#include "daemon/shell/runs/run_output.hpp"
#include "daemon/shell/runs/run_starts.hpp"
#include "daemon/shell/upgrade/hand_over.hpp"
#include "daemon/shell/upgrade/upgrader.hpp"
#include "daemon/shell/uv_handle.hpp"

namespace pkit::shell {

class RequestHandler;
namespace http {
class Endpoint;
}  // namespace http

// The Daemon is the control room's DaemonPort, the HTTP endpoint's HttpPort, and the
// host of the Reloader and the Upgrader, all privately: each holds it only as that.
class Daemon : private DaemonPort,
               private http::HttpPort,
               private ReloadHost,
               private upgrade::UpgradeHost {
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

private:
    // --- Read by every port: nothing waits. A run still between fork and exec (or whose
    // fork waits for a later turn) has no pid yet.
    const core::Supervisor& supervisor() const override { return m_supervisor; }
    core::Now now() const override;
    // pkitd's own log: one line on stderr, text or JSON.
    void log(std::string_view level, const std::string& message) override;
    // --- HttpPort ----------------------------------------------------------------------
    uv_loop_t* loop() const override { return m_loop; }
    std::uint64_t orphans_reaped() const override { return m_orphans; }
    double uptime() const override;
    std::optional<LogFiles::Stats> log_file_stats(std::size_t service) const override {
        return m_logs.stats(service);
    }
    std::vector<RunCgroupRead> run_cgroup_reads(
        const std::vector<std::size_t>& services) const override {
        return m_cgroups.reads(services);
    }
    // --- DaemonPort --------------------------------------------------------------------
    proto::DaemonStatus daemon_status() const override;
    void read_resources(ResourcesDone done) override { m_cgroups.read_resources(std::move(done)); }
    std::optional<proto::ResourceLimitsInfo> resource_limits(std::size_t service) const override {
        return m_cgroups.limits_report(service);
    }
    std::optional<proto::LogFileInfo> log_file(std::size_t service) const override {
        return m_logs.info(service);
    }
    bool rotate_log(std::size_t service) override { return m_logs.rotate(service); }
    bool read_log(std::size_t service, const ReadBackQuery& query, LogReadDone done) override {
        return m_logs.read_back(service, query, std::move(done));
    }
    void command(const std::function<void(RunCommands&)>& act) override;
    void wake_at(core::TimePoint deadline) override;
    void reload(ReloadDone done) override { m_reloader.reload(std::move(done)); }
    void preview_reload(PreviewDone done) override { m_reloader.preview(std::move(done)); }
    void request_shutdown(const std::string& why) override;
    std::optional<std::string> scale(const std::string& name, int count) override {
        return m_reloader.scale(name, count);
    }
    void upgrade(std::string binary, UpgradeDone done) override {
        m_upgrader.upgrade(std::move(binary), std::move(done));
    }
    // --- ReloadHost --------------------------------------------------------------------
    void log_load_warnings(const std::vector<config::Diagnostic>& warnings) override;
    std::vector<config::Diagnostic> tree_errors(const config::Tree& tree) const override {
        return m_cgroups.reload_errors(tree);
    }
    std::expected<ListenSockets::Staged, std::vector<config::Diagnostic>> stage_sockets(
        const config::Tree& tree) override;
    // A new tree on the Supervisor (a reload's or a scale's), and the owners around it:
    // a slot no owner holds any more may go to another service (Supervisor::reload_from).
    core::ReloadOutcome apply_tree(config::Tree tree,
                                   std::optional<ListenSockets::Staged> sockets) override;
    void reloading(bool started) override;
    // --- UpgradeHost -------------------------------------------------------------------
    std::optional<std::string> busy_for_upgrade() override;
    std::string upgrade_state(int format, std::vector<int>& kept) override;
    std::expected<void, std::string> read_config(BackgroundLoad::Done done) override {
        return m_reloader.read_for_upgrade(std::move(done));
    }
    std::vector<upgrade::ScaledFact> scaled_facts() const override {
        return m_reloader.scaled_facts();
    }
    void flush_signals() override { m_signal_pace.flush(); }
    void flush_output() override {
        m_log.flush();
        (void)m_logs.flush(k_logs_flush);  // the next pkitd appends to the same files
    }

    // --- The loop, the pump and the dispatch (daemon.cpp) ------------------------------
    // Executes the Supervisor's pending actions (and those they cause), answers the
    // control requests they decided, and re-arms the deadline timer. Call after every
    // Supervisor input.
    void pump();
    // Pumps at the next turn: launches exec'd in one turn share a pump; deferred spawns go on.
    void pump_soon() { m_pump_soon.schedule(); }
    // exit_when = "all_done": shuts down once the Supervisor says nothing is left to run.
    void check_all_done();
    // One overload per action type: a new type in core::Action fails to compile.
    void execute(const core::Action& action);
    void emit(const core::Event& event);
    void on_child(pid_t pid, int wait_status);
    // A child's exit, offered to m_exit_owners in order; unclaimed, it goes to the core.
    // `held_by`: the owner that held the exit and offers it again (not held twice).
    void handle_exit(pid_t pid, int wait_status, const ExitOwner* held_by = nullptr);
    void on_signal(int signo);
    void on_time(core::Now t);
    void arm_timer() { m_deadlines.arm(m_supervisor.next_deadline()); }
    void kill_everything();
    void finish(int status);
    void prune_leftovers();
    // The inputs of runs: a launch's outcome, a line, a notify message, a probe's result.
    std::expected<std::unique_ptr<PreparedLaunch>, LaunchFailure> prepare(std::size_t service,
                                                                          std::uint64_t run);
    void on_launched(std::size_t service, std::uint64_t run,
                     std::expected<Launched, LaunchFailure> outcome);
    void on_line(std::size_t service, std::uint64_t run, core::Stream stream,
                 std::string_view text);
    void on_probe_result(std::size_t service, std::uint64_t run, core::ProbePurpose purpose,
                         bool ok, const std::string& detail);
    bool bind_listen_sockets();  // the start-up tree's [[listen]]; false: each error logged
    // Opens the control socket (or takes over a salvaged one), the run records, the
    // [[listen]] sockets and the HTTP endpoint; pkitd's exit status when it cannot.
    std::optional<int> open_endpoints(bool resumed);
    // After an upgrade: the descriptors and facts the previous pkitd handed over, given
    // to their owners. Before the reaper's first batch.
    void resume(upgrade::DaemonFacts& facts);
    upgrade::HandOverRooms rooms();  // every owner an upgrade hands over (hand_over.hpp)
    // After an upgrade, before the first pump: the carried clients taken over, answered.
    void take_clients_over();

    uv_loop_t* m_loop;
    DaemonOptions m_options;
    // Before the supervisor: destroyed after it, so no run outlives its sockets' owner.
    ListenSockets m_listen;
    core::Supervisor m_supervisor;
    std::mt19937_64 m_rng;
    core::TimePoint m_started;

    DaemonLog m_log;
    Reaper m_reaper;
    // Stop signals, a loop turn's budget at a time (execute: SignalAction).
    SignalPace m_signal_pace;
    std::vector<std::unique_ptr<UvHandle<uv_signal_t>>> m_signals;
    std::unique_ptr<RequestHandler> m_control;
    std::unique_ptr<http::Endpoint> m_http;  // pkitd.toml [http] (SPEC §11)
    SystemdNotifier m_systemd;
    // The owners, each in its room (destroyed in the reverse of this order).
    Cgroups m_cgroups;
    // [health] memory_max (SPEC §20): the measurements, off the loop (memory/).
    std::unique_ptr<MemoryWatch> m_memory;
    Leftovers m_leftovers;
    RunProbes m_probes;
    RunNotify m_notify;
    RunOutput m_output;
    // The log files (SPEC §18): each line on_line takes, at shutdown and upgrade flushed
    // for at most k_logs_flush.
    ServiceLogs m_logs;
    static constexpr std::chrono::seconds k_logs_flush{2};
    // SOCKET.runs: which processes the runs are, for the next pkitd should this one die.
    RunRecords m_run_records;
    RunStarts m_starts;
    upgrade::Upgrader m_upgrader;
    Deadlines m_deadlines;
    // Every child's exit is offered to these, in exit_order() (handle_exit).
    std::vector<ExitOwner*> m_exit_owners;
    NextTurn m_pump_soon;  // see pump_soon()
    // prune_leftovers() once a turn, not once an exit: it asks the kernel about every
    // leftover group, and a shutdown of N services that each leave one had N exits.
    NextTurn m_prune_soon;
    std::uint64_t m_orphans = 0;
    bool m_pumping = false;
    std::optional<int> m_exit_status;
    // After an upgrade in place, until run() takes them over: the clients carried.
    std::optional<upgrade::Takeover> m_takeover;
    Reloader m_reloader;  // last: its reads in the background are detached first
};

}  // namespace pkit::shell
