#pragma once
// Reaping every child (SPEC §1): pkitd waits with waitpid(-1, WNOHANG) in a loop and
// dispatches by pid, so it also reaps orphans re-parented to it. libuv's own child
// spawning is never used: it reaps only the pids it spawned, one at a time.

#include <sys/types.h>
#include <uv.h>

#include <cstddef>
#include <expected>
#include <functional>

#include "daemon/shell/uv_handle.hpp"

namespace pkit::shell {

class Reaper {
public:
    // Called once per reaped child with its pid and raw wait status (WIFEXITED...).
    // Pids pkitd did not start (orphans) come here too; telling them apart is the
    // caller's business. Must not throw (an exception is swallowed) and must not
    // destroy the Reaper.
    using Callback = std::function<void(pid_t pid, int wait_status)>;

    Reaper(uv_loop_t* loop, Callback callback);

    Reaper(const Reaper&) = delete;
    Reaper& operator=(const Reaper&) = delete;

    // Starts watching SIGCHLD; returns the libuv error code on failure. Call reap_now()
    // right after, for children that exited before the watch began.
    std::expected<void, int> start();

    // Reaps every child that has already exited, calling the callback for each, and
    // returns how many were reaped. Never blocks.
    std::size_t reap_now();

private:
    static void on_signal(uv_signal_t* handle, int signo);

    UvHandle<uv_signal_t> m_signal;
    Callback m_callback;
};

// Makes pkitd a child subreaper (PR_SET_CHILD_SUBREAPER) unless it is PID 1, which
// inherits orphans anyway, so that orphans of its services are re-parented to it and
// reaped instead of escaping to the host's init. Returns the errno on failure.
std::expected<void, int> become_subreaper_unless_pid1();

}  // namespace pkit::shell
