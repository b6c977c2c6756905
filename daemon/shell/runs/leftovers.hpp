#pragma once
// What is left of runs' process groups after their main process exited (SPEC §7): the
// core's CleanupGroupAction sends the stop signal to the group; a group that still
// holds processes is kept here until it is empty, and killed at its grace's end. An
// upgrade in place hands them over.

#include <sys/types.h>

#include <optional>
#include <vector>

#include "daemon/core/types.hpp"
#include "daemon/shell/deadlines/deadlines.hpp"
#include "daemon/shell/upgrade/state_file.hpp"

namespace pkit::shell {

class Leftovers final : public DeadlineOwner {
public:
    // The stop signal (with SIGCONT) to the group; kept when anything is left in it.
    void cleanup(const core::CleanupGroupAction& action, core::TimePoint now);
    // Forgets the groups that are empty now (one kill(-pgid, 0) each); true when none
    // is left.
    bool prune();
    bool empty() const { return m_left.empty(); }
    // SIGKILL to every group kept (a second SIGTERM).
    void kill_all();

    std::optional<core::TimePoint> next_deadline() const override;
    // SIGKILL to the groups whose grace has ended (once each).
    void on_time(core::TimePoint now) override;

    // An upgrade in place: each group with the time left to its kill, and taken back.
    void hand_over(upgrade::DaemonFacts& facts, core::TimePoint now) const;
    void resume(const upgrade::DaemonFacts& facts, core::TimePoint saved);

private:
    struct Leftover {
        pid_t pgid;
        core::TimePoint kill_at;
        bool killed;
    };
    std::vector<Leftover> m_left;
};

}  // namespace pkit::shell
