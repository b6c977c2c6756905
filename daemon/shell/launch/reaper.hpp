#pragma once
// Reaping every child (SPEC §1): pkitd waits with waitpid(-1, WNOHANG) in a loop and
// dispatches by pid, so it also reaps orphans re-parented to it. libuv's own child
// spawning is never used: it reaps only the pids it spawned, one at a time.
//
// Reaping is bounded per loop turn: a SIGCHLD reaps for at most a time budget (5 ms),
// and a scan at most a batch of children; the rest is left to the next turn (without
// waiting for another SIGCHLD), so that children exiting as fast as they are reaped (a
// crash loop, a service spewing orphans) cannot keep pkitd from its signals, its socket
// and its timers.
//
// waitpid(-1) costs the kernel a look at every child older than the first one that
// has ended: up to 2-4 ms with ten thousand runs on a small VM, paid in full by the
// call that finds none. So the children the caller expects to have ended (a run whose
// output pipes reached end of file) are waited for by pid first, at a cost that does
// not grow with the number of children, for as long as the budget lasts: in a mass
// stop they are reaped as they end, not left in a backlog for after the last one.
// A scan (waitpid(-1)) comes after. One that cost more than 0.2 ms puts the next off
// by nine times as long (a timer makes sure it comes), so that such scans take at most
// a tenth of the loop's time, when it found nothing or when children were reaped by pid
// since the scan before: then it only finds sooner what the waits by pid would reap.
// A costly scan that found children while nothing else reaped is not put off: it is
// the only way to reap runs whose pipes never end. With a few hundred children a scan
// costs microseconds and nothing waits.

#include <sys/types.h>
#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <expected>
#include <functional>
#include <vector>

#include "daemon/shell/uv_handle.hpp"

namespace pkit::shell {

// How long the Reaper reaps in one turn, and when it puts a scan of every child off
// (see above); other values only in tests.
struct ReapPace {
    // What a turn's reaping may spend (it reaps at least one child that has ended).
    static constexpr std::uint64_t k_budget_ns = 5'000'000;
    std::uint64_t budget_ns = k_budget_ns;
    // A scan that cost less than this puts nothing off.
    static constexpr std::uint64_t k_cheap_ns = 200'000;
    std::uint64_t cheap_ns = k_cheap_ns;
    // A costly scan puts the next off by this many times its cost.
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

    // How many children one turn's scan reaps at most, by default.
    static constexpr std::size_t k_default_batch = 64;

    // `batch` (at least 1) bounds the scan of reap_batch().
    Reaper(uv_loop_t* loop, Callback callback, std::size_t batch = k_default_batch,
           ReapPace pace = {});

    Reaper(const Reaper&) = delete;
    Reaper& operator=(const Reaper&) = delete;

    // Starts watching SIGCHLD; returns the libuv error code on failure. Call
    // reap_batch() right after, for children that exited before the watch began.
    std::expected<void, int> start();

    // Reaps children that have already exited, calling the callback for each, and
    // returns how many were reaped: the expected ones while the turn's budget lasts,
    // then, unless scans are put off, up to `batch` found by a scan. When the budget or
    // the batch ran out, more may be waiting: the reaping goes on at the loop's next turn
    // (see continuing()), not here. Never blocks.
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
    // Until uv_hrtime() reaches `until_ns` (at least one child), then a scan of at most
    // `limit`; `more` says whether one of them stopped before it was done.
    std::size_t reap(std::size_t limit, std::uint64_t until_ns, bool& more);
    std::size_t reap_expected(std::uint64_t until_ns, bool& more);
    // m_callback, an exception swallowed.
    void deliver(pid_t pid, int status);
    struct ScanCost {
        std::uint64_t total_ns = 0;      // its waitpid(-1) calls
        std::uint64_t fruitless_ns = 0;  // the last one, when it found no child
    };
    std::size_t scan(std::size_t limit, std::uint64_t until_ns, ScanCost& cost, bool& more);

    UvHandle<uv_signal_t> m_signal;
    NextTurn m_more;
    Timer m_put_off;  // the scan put off, when it is due
    Callback m_callback;
    std::size_t m_batch;
    ReapPace m_pace;
    struct Expected {
        pid_t pid;
        std::uint8_t tries;
    };
    std::vector<Expected> m_expected;
    std::uint64_t m_next_scan_ns = 0;  // uv_hrtime() from which a scan may run again
    bool m_by_pid_since_scan = false;  // a child was reaped by pid since the last scan
};

// Makes pkitd a child subreaper (PR_SET_CHILD_SUBREAPER) unless it is PID 1, which
// inherits orphans anyway, so that orphans of its services are re-parented to it and
// reaped instead of escaping to the host's init. Returns the errno on failure.
std::expected<void, int> become_subreaper_unless_pid1();

}  // namespace pkit::shell
