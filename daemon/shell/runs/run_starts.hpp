#pragma once
// The owner of runs being started (SPEC §7): the core's SpawnActions queued, prepared
// on the loop (Prepare) and cloned on the Spawner's thread, their report pipes watched
// by PendingLaunches until each child has exec'd or failed (Launched), and exits reaped
// before their launch's outcome reached the loop deferred until it does.
//
//   SpawnAction ──spawn──▶ queue ──spawn_due (this turn's budget, the Spawner's room)──▶
//     Prepare ──▶ Spawner (thread: clone) ──▶ take_spawned ──▶ PendingLaunches ──Launched──▶
//
// Spawns are never made inside the reaping (reaping()): children exiting as fast as
// they start would keep it from returning to the loop. A command that acts on runs
// calls resolve() first: the core can stop or signal only a run whose pid it knows.

#include <sys/types.h>
#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <vector>

#include "daemon/core/supervisor.hpp"
#include "daemon/shell/child_exit.hpp"
#include "daemon/shell/launch/launcher.hpp"
#include "daemon/shell/launch/pending_launch.hpp"
#include "daemon/shell/launch/spawner.hpp"
#include "daemon/shell/uv_handle.hpp"

namespace pkit::shell {

class RunStarts final : public ExitOwner {
public:
    struct Hooks {
        // Everything a launch of `run` of `service` needs, prepared on the loop; or why
        // it cannot start (reported at the next turn).
        std::function<std::expected<std::unique_ptr<PreparedLaunch>, LaunchFailure>(
            std::size_t service, std::uint64_t run)>
            prepare;
        // The Spawner cloned `run` of `service` as `pid` (not yet exec'd).
        std::function<void(std::size_t service, pid_t pid)> cloned;
        // A launch's outcome: exec'd, or failed (from PendingLaunches).
        PendingLaunches::Callback launched;
        // An exit deferred while its pid was unknown, now known (or an orphan's).
        std::function<void(pid_t pid, int wait_status)> exit;
        // A pump at the loop's next turn.
        std::function<void()> pump_soon;
        // Whether a pump is under way (resolve() then leaves the pump to it).
        std::function<bool()> pumping;
    };

    RunStarts(uv_loop_t* loop, const core::Supervisor& supervisor, Hooks hooks);
    RunStarts(const RunStarts&) = delete;
    RunStarts& operator=(const RunStarts&) = delete;

    // Starts the Spawner's thread; without it, launches clone from the loop.
    std::expected<void, int> start_thread() { return m_spawner.start(); }
    // The reaping is under way while the guard lives: spawns wait for the next turn.
    [[nodiscard]] ScopedFlag reaping() { return ScopedFlag(m_reaping); }
    bool in_reaping() const { return m_reaping; }
    // A new loop turn: the budget of spawns is refilled.
    void new_turn() { m_budget = k_spawns_per_turn; }

    // Queues `run` of `service` behind those waiting, and spawns what spawn_due()
    // allows now (nothing while reaping: a pump at the next turn).
    void spawn(std::size_t service, std::uint64_t run);
    // Spawns the runs queued, in order, up to this turn's budget and the Spawner's room
    // (every one with `all`); returns how many.
    std::size_t spawn_due(bool all = false);
    // Spawns every queued run, waits for the Spawner, then resolves every launch in
    // flight, blocking until each child has exec'd or failed. When anything was
    // resolved and no pump is under way, a pump follows at the next turn. Returns how
    // many.
    std::size_t resolve();
    // resolve() for one service only.
    std::size_t resolve(std::size_t service);
    // Feeds the Spawner's finished jobs to PendingLaunches, then the deferred exits of
    // their pids; once the Spawner is idle, a deferred exit no launch claimed is an
    // orphan's.
    // Returns how many exits it handed to Hooks::exit.
    std::size_t take_spawned();
    // A reaped `pid` nobody knows yet while the Spawner is busy: maybe a child whose
    // outcome is still on its way. Deferred (true) until take_spawned() settles it.
    // ("Held" is kept for the cgroup's hold of a run's exit, cgroup/cgroups.hpp.)
    bool defer_unknown(pid_t pid, int wait_status);
    // A failed launch's child: claimed (its failure went to Hooks::launched).
    bool on_child_exit(ChildExit& exit) override { return m_launches.on_exit(exit.pid); }

    // Tuning, as measured in bench/README.md: spawns a loop turn, and launches handed
    // to the Spawner whose outcome has not come back.
    static constexpr std::size_t k_spawns_per_turn = 4;
    static constexpr std::size_t k_spawns_in_flight = 8;

private:
    void spawn_now(std::size_t service, std::uint64_t run);
    bool knows_pid(pid_t pid) const;

    const core::Supervisor& m_supervisor;
    Hooks m_hooks;
    PendingLaunches m_launches;
    // After m_launches, which its outcomes feed: destroyed (and joined) first.
    Spawner m_spawner;
    bool m_reaping = false;
    std::vector<core::SpawnAction> m_due;
    // Exits reaped while the Spawner was busy, of pids not known yet.
    struct UnknownExit {
        pid_t pid;
        int wait_status;
    };
    std::vector<UnknownExit> m_unknown_exits;
    // Spawns left to this loop turn; refilled by new_turn(). Its bound dates from forks
    // on the loop (~3 ms of pkitd CPU each); with the Spawner a spawn costs the loop its
    // preparation only, and 4, 16 or no bound measured the same in a crash storm, so it
    // stays as a bound on one turn's work.
    std::size_t m_budget = k_spawns_per_turn;
    // Without k_spawns_in_flight a start-up of 1,000 would hold 1,000 prepared launches
    // at once: their environments (twice pkitd's memory at start-up) and three pipes
    // each (6,000 fds beside the runs' 2,000).
};

}  // namespace pkit::shell
