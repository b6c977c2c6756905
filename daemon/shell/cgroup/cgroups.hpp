#pragma once
// The owner of pkitd's cgroups while it runs (SPEC §15): the choice at start-up, each
// service's cgroup and its [resources], a group-mode run's exit held until its cgroup
// is empty, the guard on every signal to a run, the freeze of pause and resume, the
// readings of each run's resources (`status --resources`), and what an upgrade in
// place hands over of them. Without cgroups every call is answered as "none": the
// signal guard then only sends to the run's pid.
//
//   Daemon::handle_exit ──on_child_exit──▶ Cgroups ──held──▶ RunCgroups (cgroup.events)
//                                            └─ emptied ──▶ Emptied (the Daemon offers
//                                               the exit again, may_hold = false)
//   SignalAction, `pkitctl signal` ──send / signal_client──▶ the cgroup while an exit is
//                                                            held, else the pid

#include <sys/types.h>
#include <uv.h>

#include <cstddef>
#include <expected>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/loader.hpp"
#include "config/model.hpp"
#include "daemon/core/supervisor.hpp"
#include "daemon/shell/cgroup/cgroup_find.hpp"
#include "daemon/shell/cgroup/cgroup_tree.hpp"
#include "daemon/shell/cgroup/resources_pass.hpp"
#include "daemon/shell/cgroup/run_cgroups.hpp"
#include "daemon/shell/child_exit.hpp"
#include "daemon/shell/control/daemon_port.hpp"
#include "daemon/shell/deadlines/deadlines.hpp"
#include "daemon/shell/upgrade/state_file.hpp"

namespace pkit::shell {

class Cgroups final : public ExitOwner, public DeadlineOwner {
public:
    using Log = std::function<void(std::string_view level, const std::string& message)>;
    using Clock = std::function<core::Now()>;
    // A held exit whose cgroup emptied: `pid`'s exit goes on (Daemon::handle_exit).
    using Emptied = std::function<void(pid_t pid, int wait_status)>;
    // The process layer: `signo` to `pid` (its process group with `group`), with SIGCONT
    // in the stop sequence's order when `then_cont` (launch/launcher.hpp's signal_run and
    // stop_signal). Unit tests record instead.
    using Signaller = std::function<void(pid_t pid, int signo, bool group, bool then_cont)>;
    static Signaller process_signaller();

    Cgroups(uv_loop_t* loop, const core::Supervisor& supervisor, Log log, Clock clock,
            Emptied emptied, Signaller signaller = process_signaller());
    ~Cgroups();
    Cgroups(const Cgroups&) = delete;
    Cgroups& operator=(const Cgroups&) = delete;

    // Chooses and takes over pkitd's cgroup per `cgroups` (reading `proc_self`); false
    // when pkitd must exit 3. `resumed`: after an upgrade in place, the services'
    // cgroups hold its runs and are adopted.
    bool open(const std::string& proc_self, bool resumed);
    // A test's tree (a fake cgroupfs): as open() with cgroups chosen at `tree`'s root.
    void open_at(std::unique_ptr<CgroupTree> tree);
    // The services' cgroups go (pkitd's end).
    void close();
    bool enabled() const { return m_tree != nullptr; }
    // pkitd's row of `status`: the cgroup in use, or why none.
    proto::CgroupsInfo info() const;

    // The cgroup directory a run of `service` joins ("" without cgroups), its
    // [resources] applied first; the reason when it cannot be made.
    std::expected<std::string, std::string> run_cgroup(std::size_t service);
    // Whether a run of `service` may be cloned straight into its cgroup
    // (CLONE_INTO_CGROUP): not into one cgroup.kill was written to.
    bool clone_into(std::size_t service) const;
    // A run of `service` started: its usage and OOM kills count from now.
    void run_started(std::size_t service);
    // What became of `service`'s [resources] when last applied (null: none set, or not
    // applied yet).
    std::optional<proto::ResourceLimitsInfo> limits_report(std::size_t service) const;

    // Claims the exit of a group-mode run whose cgroup still holds processes (held until
    // it is empty, then Emptied); else notes an OOM kill of a current run's cgroup.
    bool on_child_exit(ChildExit& exit) override;
    // Whether `service`'s run exited and its cgroup is held.
    bool holding(std::size_t service) const;
    // The core's SignalAction, the guard of every signal to a run: while its exit is
    // held the main pid is reaped (and may be another's), so the signal goes to the
    // cgroup; else to the pid, and a SIGKILL of a group to the cgroup too.
    void send(const core::SignalAction& action);
    // A client's signal (`pkitctl signal`) to `service`'s run `pid`, through the same
    // guard as send().
    void signal_client(std::size_t service, pid_t pid, int signo, bool group);
    // The core's FreezeAction (pause, resume): cgroup.freeze.
    void freeze(const core::FreezeAction& action);
    // SIGKILL to everything in `service`'s cgroup (a second SIGTERM).
    void kill(std::size_t service);
    // Every held cgroup killed now.
    void kill_held();

    // Each of `services`' cgroup, for a read off the loop; empty without cgroups.
    std::vector<RunCgroupRead> reads(const std::vector<std::size_t>& services) const;
    // DaemonPort::read_resources: one pass for every request waiting.
    void read_resources(DaemonPort::ResourcesDone done);

    // The errors a reloaded `tree` has for the cgroups in use (`required` limits).
    std::vector<config::Diagnostic> reload_errors(const config::Tree& tree) const;
    // Slot `service` went to another service (a reload): made afresh before its launch.
    void slot_reused(std::size_t service);
    // Changed [resources] written to every service's cgroup.
    void apply_all_limits();
    // Why pkitd cannot hand over now: a held exit is not in the state.
    std::optional<std::string> busy() const;

    // The earliest kill deadline of a held exit; those due killed.
    std::optional<core::TimePoint> next_deadline() const override;
    void on_time(core::TimePoint now) override;

    // An upgrade in place: what each run read at its start, handed over and taken back.
    void hand_over(upgrade::DaemonFacts& facts) const;
    void resume(const upgrade::DaemonFacts& facts);

private:
    void started_with(std::unique_ptr<CgroupTree> tree);
    void apply_limits(std::size_t service);
    void start_resources_pass();

    uv_loop_t* m_loop;
    const core::Supervisor& m_supervisor;
    Log m_log;
    Clock m_clock;
    Emptied m_emptied;
    Signaller m_signaller;
    // The choice made at start-up, and with cgroups the tree and the services' cgroups
    // (null without).
    CgroupChoice m_choice;
    std::unique_ptr<CgroupTree> m_tree;
    std::unique_ptr<RunCgroups> m_runs;
    // Per service launched so far: the [resources] last applied (or reported).
    std::vector<config::ResourceLimits> m_limits_applied;
    // Per service: what became of its [resources] when last applied, for `status`.
    std::vector<std::optional<proto::ResourceLimitsInfo>> m_limit_reports;
    // `status --resources`: the pass under way, and those that asked since (the next).
    ResourcesPass* m_resources_pass = nullptr;
    std::vector<DaemonPort::ResourcesDone> m_resources_waiting;
};

}  // namespace pkit::shell
