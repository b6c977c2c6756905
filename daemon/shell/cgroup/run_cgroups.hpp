#pragma once
// The services' cgroups while pkitd runs (SPEC §15): each made before its service's
// first launch, and the end of a group-mode run held back until its cgroup is empty.
// A run's main process may exit while processes that left its process group live on
// in its cgroup; the run has not ended until they are gone. Its exit is kept here, the
// rest get the stop signal, cgroup.events is watched (inotify, through uv_fs_event),
// and the whole cgroup is killed at the stop timeout; once `populated 0` the exit
// goes on to the core as if it had just happened.

#include <uv.h>

#include <cstddef>
#include <expected>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon/core/types.hpp"
#include "daemon/shell/cgroup/cgroup_tree.hpp"
#include "daemon/shell/cgroup/run_resources.hpp"
#include "daemon/shell/uv_handle.hpp"

namespace pkit::shell {

class RunCgroups {
public:
    // A held exit whose cgroup has emptied. Called from the loop; must not throw.
    using Emptied = std::function<void(std::size_t service, pid_t pid, int wait_status)>;

    RunCgroups(uv_loop_t* loop, CgroupTree& tree, Emptied emptied);
    RunCgroups(const RunCgroups&) = delete;
    RunCgroups& operator=(const RunCgroups&) = delete;

    CgroupTree& tree() const { return m_tree; }

    // The cgroup directory of `service`, named `name`, created when missing (once: later
    // calls only name it); the reason when it cannot be.
    std::expected<std::string, std::string> prepare(std::size_t service, const std::string& name);

    // Run `pid` of `service` (cgroup `name`) exited with `wait_status`. When its cgroup
    // still holds processes the exit is held: they are thawed (a paused run's) and get
    // `signo` (and SIGCONT), the cgroup
    // is killed at `kill_at`, and Emptied delivers the exit once it is empty. Returns
    // whether it was held.
    bool hold(std::size_t service, const std::string& name, pid_t pid, int wait_status, int signo,
              core::TimePoint kill_at);
    // Whether `service`'s exit is held.
    bool holding(std::size_t service) const;
    // The cgroup name of a held exit, if any is held.
    std::optional<std::string> any_held() const;

    // SIGKILL to everything in `name`'s cgroup (cgroup.kill).
    void kill(const std::string& name) { m_tree.kill(name); }
    // `signo` to everything in `name`'s cgroup.
    void signal(const std::string& name, int signo) const { m_tree.signal(name, signo); }
    // Kills every held cgroup now (a second SIGTERM).
    void kill_held();

    // A run of `service` started: its cgroup's CPU time and OOM kills from now on are
    // the run's (cpu.stat usage_usec and memory.events oom_kill read now).
    void run_started(std::size_t service, const std::string& name);
    // Whether the kernel's OOM killer killed a process of `service`'s cgroup since its
    // current run started: memory.events oom_kill read again, at the run's end, and
    // compared (false without the memory controller, or without a reading at the start).
    bool oom_killed_since_start(std::size_t service, const std::string& name) const;
    // What `service`'s current run read at its start (usage_usec, oom_kill), for an
    // upgrade in place to hand over; and the next pkitd's side, taking them back.
    std::pair<std::optional<std::uint64_t>, std::optional<std::uint64_t>> run_bases(
        std::size_t service) const;
    void restore_run_bases(std::size_t service, std::optional<std::uint64_t> usage_usec,
                           std::optional<std::uint64_t> oom_kill);
    // Slot `service` went to another service (a reload): its cgroup is made afresh,
    // under the new name, before its first launch.
    void forget(std::size_t service);
    // What a reader off the loop needs for `service`'s resources (run_resources.hpp).
    RunCgroupRead read_of(std::size_t service, const std::string& name) const;

    // The earliest kill deadline of a held exit.
    std::optional<core::TimePoint> next_deadline() const;
    // Kills the cgroups whose deadline is due.
    void on_time(core::TimePoint now);

private:
    struct Held {
        std::size_t service;
        std::string name;
        pid_t pid;
        int wait_status;
        core::TimePoint kill_at;
        bool killed = false;
        std::unique_ptr<UvHandle<uv_fs_event_t>> watch;
    };
    static void on_event(uv_fs_event_t* handle, const char* file, int events, int status);
    void check(std::size_t service);

    uv_loop_t* m_loop;
    CgroupTree& m_tree;
    Emptied m_emptied;
    std::vector<std::unique_ptr<Held>> m_held;
    // Per service: whether its cgroup was made.
    std::vector<bool> m_made;
    // Per service, read when its current run started: cpu.stat usage_usec and
    // memory.events oom_kill.
    std::vector<std::optional<std::uint64_t>> m_cpu_base;
    std::vector<std::optional<std::uint64_t>> m_oom_base;
};

}  // namespace pkit::shell
