#pragma once
// Reaping every child (SPEC §1): pkitd waits with waitpid(-1, WNOHANG) in a loop and
// dispatches by pid, so it also reaps orphans re-parented to it. libuv's own child
// spawning is never used: it reaps only the pids it spawned, one at a time.
//
// Reaping is bounded per loop turn: a SIGCHLD reaps at most a batch of children and
// leaves the rest to the next turn (without waiting for another SIGCHLD), so that
// children exiting as fast as they are reaped (a crash loop, a service spewing
// orphans) cannot keep pkitd from its signals, its socket and its timers.
//
// waitpid(-1) costs the kernel a look at every child: about 2-4 ms with ten thousand
// runs on a small VM, paid again by the call that finds none left. So the children the
// caller expects to have ended (a run whose output pipes reached end of file) are
// waited for by pid first, at a cost that does not grow with the number of children;
// and once a scan that found no child cost more than 0.2 ms, the next waits until nine
// times as long has passed (a timer makes sure it comes), so fruitless scans take at
// most a tenth of the loop's time. A scan that finds children is never put off: it is
// the only way to reap those whose pipes never end. With a few hundred children a
// scan costs microseconds and nothing waits.

#include <sys/types.h>
#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <expected>
#include <functional>
#include <vector>

#include "daemon/shell/uv_handle.hpp"

namespace pkit::shell {

// When the Reaper puts a scan of every child off (see above); other values only in
// tests.
struct ScanThrottle {
    // A scan that found nothing and cost less than this puts nothing off.
    static constexpr std::uint64_t k_cheap_ns = 200'000;
    std::uint64_t cheap_ns = k_cheap_ns;
    // A costly fruitless scan puts the next off by this many times its cost.
    std::uint64_t put_off_factor = 9;
};

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
    Reaper(uv_loop_t* loop, Callback callback, std::size_t batch = k_default_batch,
           ScanThrottle throttle = {});

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

    // How often an expected child is waited for by pid before it is left to the scans.
    static constexpr std::uint8_t k_expect_tries = 8;

    // `pid`, a child, has probably ended or is about to: it is waited for by pid at each
    // reap (its SIGCHLD brings one; so does the next turn, while scans are put off)
    // until it is reaped, is no child of pkitd, or has had k_expect_tries tries (a run
    // that closed its output and lives on is not waited for at every SIGCHLD: a scan
    // finds it when it ends).
    void expect(pid_t pid);
    // Children waited for by pid, for tests.
    std::size_t expected() const { return m_expected.size(); }

private:
    static void on_signal(uv_signal_t* handle, int signo);
    std::size_t reap(std::size_t limit);
    std::size_t reap_expected(std::size_t limit);
    // m_callback, an exception swallowed.
    void deliver(pid_t pid, int status);
    // `fruitless_ns`: what the last call, the one that found no child, cost.
    std::size_t scan(std::size_t limit, std::uint64_t& fruitless_ns);

    UvHandle<uv_signal_t> m_signal;
    NextTurn m_more;
    Timer m_put_off;  // the scan put off, when it is due
    Callback m_callback;
    std::size_t m_batch;
    ScanThrottle m_throttle;
    struct Expected {
        pid_t pid;
        std::uint8_t tries;
    };
    std::vector<Expected> m_expected;
    std::uint64_t m_next_scan_ns = 0;  // uv_hrtime() from which a scan may run again
};

// Makes pkitd a child subreaper (PR_SET_CHILD_SUBREAPER) unless it is PID 1, which
// inherits orphans anyway, so that orphans of its services are re-parented to it and
// reaped instead of escaping to the host's init. Returns the errno on failure.
std::expected<void, int> become_subreaper_unless_pid1();

}  // namespace pkit::shell
