#pragma once
// A child's exit as the Daemon offers it to the rooms that own children (SPEC §7): the
// one seam through which an exit reaches a capability. Daemon::handle_exit offers each
// exit to its ExitOwners in a fixed order (daemon.cpp, m_exit_owners); each may claim
// it, and a claimed exit goes no further: not to a later owner, not to the core. An
// exit nobody claims reaches core::Supervisor::on_exit. A new capability that must
// see a run's end (log files, say) is one more ExitOwner in that list, not a branch of
// handle_exit.

#include <sys/types.h>
#include <sys/wait.h>

#include <cstddef>
#include <optional>

#include "daemon/core/types.hpp"

namespace pkit::shell {

struct ChildExit {
    pid_t pid = 0;
    int wait_status = 0;
    // The service whose run (current, or a start_first run draining) `pid` is, if any.
    std::optional<std::size_t> service;
    // False once the exit was held and delivered again (a cgroup that emptied): it is
    // not held twice.
    bool may_hold = true;
    // The exit as the core takes it, decoded once; an owner may add what it knows
    // (the cgroup's OOM kill).
    core::ProcessExit exit;
};

class ExitOwner {
public:
    // `exit` is offered; true claims it (this owner is done with it, nobody else sees
    // it). Called on the loop, in the reaping; must not throw.
    virtual bool on_child_exit(ChildExit& exit) = 0;

protected:
    ~ExitOwner() = default;
};

// The one place a wait status is decoded: the core takes the result.
inline core::ProcessExit decode_wait_status(int wait_status) {
    core::ProcessExit exit;
    if (WIFEXITED(wait_status)) {
        exit.code = WEXITSTATUS(wait_status);
    } else if (WIFSIGNALED(wait_status)) {
        exit.signal = WTERMSIG(wait_status);
    }
    return exit;
}

}  // namespace pkit::shell
