#include "daemon/shell/runs/leftovers.hpp"

#include <signal.h>

#include <cerrno>

#include "daemon/shell/launch/launcher.hpp"

namespace pkit::shell {

void Leftovers::cleanup(const core::CleanupGroupAction& action, core::TimePoint now) {
    // Nothing left in the group is the common case: one kill() finds out. The signal
    // goes with SIGCONT in the order of the stop sequence (SPEC §7).
    if (!stop_signal(action.pgid, action.signal, true)) {
        return;
    }
    m_left.push_back(Leftover{action.pgid, now + action.grace, false});
}

bool Leftovers::prune() {
    std::erase_if(
        m_left, [](const Leftover& left) { return ::kill(-left.pgid, 0) != 0 && errno == ESRCH; });
    return m_left.empty();
}

void Leftovers::kill_all() {
    for (Leftover& left : m_left) {
        signal_run(left.pgid, SIGKILL, true);
    }
}

std::optional<core::TimePoint> Leftovers::next_deadline() const {
    std::optional<core::TimePoint> next;
    for (const Leftover& left : m_left) {
        if (!left.killed && (!next || left.kill_at < *next)) {
            next = left.kill_at;
        }
    }
    return next;
}

void Leftovers::on_time(core::TimePoint now) {
    for (Leftover& left : m_left) {
        if (!left.killed && left.kill_at <= now) {
            left.killed = true;
            signal_run(left.pgid, SIGKILL, true);
        }
    }
}

void Leftovers::hand_over(upgrade::DaemonFacts& facts, core::TimePoint now) const {
    for (const Leftover& left : m_left) {
        facts.leftovers.push_back(
            {left.pgid,
             std::chrono::duration_cast<std::chrono::nanoseconds>(left.kill_at - now).count(),
             left.killed});
    }
}

void Leftovers::resume(const upgrade::DaemonFacts& facts, core::TimePoint saved) {
    for (const upgrade::LeftoverFact& left : facts.leftovers) {
        m_left.push_back(
            Leftover{left.pgid, saved + std::chrono::nanoseconds(left.kill_in_ns), left.killed});
    }
}

}  // namespace pkit::shell
