#pragma once
// Reaping every child (SPEC §1): pkitd waits with waitpid(-1, WNOHANG) in a loop and
// dispatches by pid, so it also reaps orphans re-parented to it. libuv's own child
// spawning is never used: it reaps only the pids it spawned, one at a time.
//
// Reaping is bounded per loop turn: a SIGCHLD reaps at most a batch of children and
// leaves the rest to the next turn (without waiting for another SIGCHLD), so that
// children exiting as fast as they are reaped (a crash loop, a service spewing
// orphans) cannot keep pkitd from its signals, its socket and its timers.

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
    // destroy the Reaper. It should not start children itself: defer that to the
    // loop (a child that exits at once would be reaped within the same batch).
    using Callback = std::function<void(pid_t pid, int wait_status)>;

    // How many children one turn reaps at most, by default.
    static constexpr std::size_t k_default_batch = 64;

    // `batch` (at least 1) bounds reap_batch().
    Reaper(uv_loop_t* loop, Callback callback, std::size_t batch = k_default_batch);

    Reaper(const Reaper&) = delete;
    Reaper& operator=(const Reaper&) = delete;

    // Starts watching SIGCHLD; returns the libuv error code on failure. Call
    // reap_batch() right after, for children that exited before the watch began.
    std::expected<void, int> start();

    // Reaps up to `batch` children that have already exited, calling the callback for
    // each, and returns how many were reaped. When the batch was full, more may be
    // waiting: the reaping goes on at the loop's next turn (see continuing()), not
    // here. Never blocks.
    std::size_t reap_batch();

    // Reaps every child that has already exited, however many, and returns how many.
    // For start-up and tests: unbounded, so only when nothing can start children
    // meanwhile. Never blocks.
    std::size_t reap_now();

    // Whether a full batch left the rest for the next loop turn.
    bool continuing() const { return m_more.pending(); }

private:
    static void on_signal(uv_signal_t* handle, int signo);
    std::size_t reap(std::size_t limit);

    UvHandle<uv_signal_t> m_signal;
    NextTurn m_more;
    Callback m_callback;
    std::size_t m_batch;
};

// Makes pkitd a child subreaper (PR_SET_CHILD_SUBREAPER) unless it is PID 1, which
// inherits orphans anyway, so that orphans of its services are re-parented to it and
// reaped instead of escaping to the host's init. Returns the errno on failure.
std::expected<void, int> become_subreaper_unless_pid1();

}  // namespace pkit::shell
