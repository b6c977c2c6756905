#pragma once
// The spawner thread: where runs are cloned, so that the loop never waits on a child.
// The loop prepares each launch (prepare_launch: everything that allocates) and submits
// it; the thread clones the child vfork-style (spawn_prepared, blocked until the child
// has exec'd or failed) and hands the outcome back through a uv_async, in submission
// order. What happens next is PendingLaunches' business, as for any started launch.
//
// Shared state is one mutex: the queue in, the outcomes out, and a count of finished
// jobs that the waits below watch. Nothing in pkitd plain-forks while the thread runs
// (exec probes clone vfork-style too), so no child ever inherits the mutex held.
//
// A child exists before its outcome reaches the loop: the loop's waitpid(-1) may reap
// it first (a /bin/true exits at once). The Daemon holds such an exit while busy() and
// matches it when the outcome arrives.

#include <sys/types.h>
#include <uv.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <expected>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "daemon/shell/launch/launcher.hpp"
#include "daemon/shell/uv_handle.hpp"

namespace pkit::shell {

class Spawner {
public:
    struct Outcome {
        std::size_t service;
        std::uint64_t run;
        // The started child (not yet known to have exec'd: its report tells), or a clone
        // failure.
        std::expected<StartedLaunch, LaunchFailure> started;
    };
    // Called on the loop when outcomes are waiting in take(). Must not throw (an
    // exception is swallowed).
    using Ready = std::function<void()>;

    Spawner(uv_loop_t* loop, Ready ready);
    // Stops and joins the thread. Jobs it has not started are dropped (their fds
    // closed); outcomes not taken are dropped too, their children left to the reaper.
    ~Spawner();

    Spawner(const Spawner&) = delete;
    Spawner& operator=(const Spawner&) = delete;

    // Starts the thread with every signal blocked. On failure (returned as an errno)
    // submit() spawns on the calling thread instead, as a blocking launch would.
    std::expected<void, int> start();

    // Queues a prepared launch of run `run` of `service`. Loop thread only.
    void submit(std::size_t service, std::uint64_t run, std::unique_ptr<PreparedLaunch> prepared);

    // The outcomes finished so far, in submission order. Loop thread only.
    std::vector<Outcome> take();

    // Blocks until every job submitted so far has finished (its outcome waits in take()).
    // A job is one clone, which returns once the child has exec'd or failed.
    void wait_all();
    // Blocks until every job of `service` submitted so far has finished.
    void wait_service(std::size_t service);

    // Whether a job was submitted whose outcome take() has not returned yet.
    bool busy() const { return !m_unfinished.empty(); }

private:
    struct Job {
        std::size_t service;
        std::uint64_t run;
        std::unique_ptr<PreparedLaunch> prepared;
    };

    void work();
    void wait_until(std::uint64_t ticket);
    static void on_async(uv_async_t* handle);

    Ready m_ready;
    UvHandle<uv_async_t> m_async;
    std::thread m_thread;

    // Shared with the thread, under m_mutex.
    std::mutex m_mutex;
    std::condition_variable m_wake;      // the thread: a job, or stop
    std::condition_variable m_finished;  // waiters: m_done_count grew
    std::deque<Job> m_queue;
    std::vector<Outcome> m_done;
    std::uint64_t m_done_count = 0;
    bool m_stopping = false;

    // Loop thread only: the ticket (1, 2, ...) and service of each job submitted and not
    // yet taken, in order.
    struct Ticket {
        std::uint64_t number;
        std::size_t service;
    };
    std::deque<Ticket> m_unfinished;
    std::uint64_t m_submitted = 0;
};

}  // namespace pkit::shell
