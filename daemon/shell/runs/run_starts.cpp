#include "daemon/shell/runs/run_starts.hpp"

#include <algorithm>

namespace pkit::shell {

RunStarts::RunStarts(uv_loop_t* loop, const core::Supervisor& supervisor, Hooks hooks)
    : m_supervisor(supervisor),
      m_hooks(std::move(hooks)),
      m_launches(loop, m_hooks.launched, m_hooks.pump_soon),
      m_spawner(loop, [this] {
          take_spawned();
          m_hooks.pump_soon();
      }) {}

void RunStarts::spawn(std::size_t service, std::uint64_t run) {
    // In order behind any run already waiting; spawn_due() applies this turn's budget and
    // the Spawner's room, and arranges the next pump for the rest.
    m_due.push_back(core::SpawnAction{service, run});
    if (m_reaping) {
        // A restart due at once: spawned from inside the reaping, children exiting before
        // it ends would keep it from ever returning to the loop.
        m_hooks.pump_soon();
        return;
    }
    spawn_due();
}

void RunStarts::spawn_now(std::size_t service, std::uint64_t run) {
    auto prepared = m_hooks.prepare(service, run);
    if (!prepared) {
        // Reported at the next turn, not from inside this pump: a service that cannot
        // start, restarted at once, would otherwise fail and respawn here for ever.
        m_launches.add_failed(service, run, std::move(prepared.error()));
        return;
    }
    // The clone happens on the Spawner's thread; the service stays `starting` until the
    // child has exec'd (take_spawned, then PendingLaunches).
    m_spawner.submit(service, run, std::move(*prepared));
}

std::size_t RunStarts::take_spawned() {
    std::size_t handled = 0;
    for (Spawner::Outcome& outcome : m_spawner.take()) {
        if (!outcome.started) {
            m_launches.add_failed(outcome.service, outcome.run, std::move(outcome.started.error()));
            continue;
        }
        pid_t pid = outcome.started->pid;
        m_hooks.cloned(outcome.service, pid);
        m_launches.add(outcome.service, outcome.run, std::move(*outcome.started));
        auto deferred = std::ranges::find(m_unknown_exits, pid, &UnknownExit::pid);
        if (deferred != m_unknown_exits.end()) {
            // The reaper was first: the child exited before its outcome got here.
            int wait_status = deferred->wait_status;
            m_unknown_exits.erase(deferred);
            m_hooks.exit(pid, wait_status);
            ++handled;
        }
    }
    if (!m_spawner.busy() && !m_unknown_exits.empty()) {
        // No launch can claim them any more: orphans.
        std::vector<UnknownExit> orphans;
        orphans.swap(m_unknown_exits);
        for (const UnknownExit& exit : orphans) {
            m_hooks.exit(exit.pid, exit.wait_status);
            ++handled;
        }
    }
    return handled;
}

bool RunStarts::knows_pid(pid_t pid) const {
    return m_launches.knows(pid) || m_supervisor.service_of(pid).has_value();
}

bool RunStarts::defer_unknown(pid_t pid, int wait_status) {
    if (!m_spawner.busy() || knows_pid(pid)) {
        return false;
    }
    take_spawned();
    if (!m_spawner.busy() || knows_pid(pid)) {
        return false;
    }
    m_unknown_exits.push_back(UnknownExit{pid, wait_status});
    return true;
}

std::size_t RunStarts::spawn_due(bool all) {
    if (m_reaping || m_due.empty()) {
        return 0;
    }
    std::size_t in_flight = m_spawner.in_flight();
    std::size_t room = in_flight >= k_spawns_in_flight ? 0 : k_spawns_in_flight - in_flight;
    std::size_t count = all ? m_due.size() : std::min({m_budget, room, m_due.size()});
    m_budget -= std::min(m_budget, count);
    // Off the queue before any is spawned, so that what a spawn causes cannot see them.
    std::vector<core::SpawnAction> due(m_due.begin(),
                                       m_due.begin() + static_cast<std::ptrdiff_t>(count));
    m_due.erase(m_due.begin(), m_due.begin() + static_cast<std::ptrdiff_t>(count));
    if (!m_due.empty() && count < room) {
        // The rest at the next turn, after the loop has polled. When the Spawner has no
        // room, its next outcome pumps instead: no turn spins waiting for it.
        m_hooks.pump_soon();
    }
    for (const core::SpawnAction& a : due) {
        spawn_now(a.service, a.run);
    }
    return due.size();
}

std::size_t RunStarts::resolve() {
    std::size_t resolved = spawn_due(true);
    m_spawner.wait_all();
    resolved += take_spawned();
    resolved += m_launches.size() == 0 ? 0 : m_launches.resolve_all();
    if (resolved > 0 && !m_hooks.pumping()) {
        // Not pumped here: the caller may be in the middle of its own loop over what a
        // pump changes (replies, followers).
        m_hooks.pump_soon();
    }
    return resolved;
}

std::size_t RunStarts::resolve(std::size_t service) {
    std::size_t resolved = 0;
    if (!m_reaping) {
        auto due = std::ranges::find(m_due, service, &core::SpawnAction::service);
        if (due != m_due.end()) {
            core::SpawnAction a = *due;
            m_due.erase(due);
            spawn_now(a.service, a.run);
            ++resolved;
        }
    }
    m_spawner.wait_service(service);
    resolved += take_spawned();
    resolved += m_launches.resolve_service(service);
    if (resolved > 0 && !m_hooks.pumping()) {
        m_hooks.pump_soon();
    }
    return resolved;
}

}  // namespace pkit::shell
