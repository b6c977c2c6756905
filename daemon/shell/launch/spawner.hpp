#pragma once
// The spawner thread(s): where runs are cloned, so that the loop never waits on a child.
// The loop prepares each launch (prepare_launch: everything that allocates) and submits
// it; a thread clones the child vfork-style (spawn_prepared, blocked until the child
// has exec'd or failed) and hands the outcome back through a uv_async. The threads
// (k_threads, one by default) take jobs in submission order; with more than one,
// outcomes may arrive out of order. What happens next is PendingLaunches' business, as
// for any started launch.
//
// Shared state is one mutex: the queue in, the jobs being cloned, the outcomes out,
// which the waits below watch. Nothing in pkitd plain-forks while the thread runs
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
    // Threads in the pool. Measured (bench/README.md): two start 1,000
    // services 14 % faster than one, but in a crash storm they restart 55 % more often
    // and double `pkitctl status`'s latency on two cores; one it is.
    static constexpr std::size_t k_threads = 1;

    struct Outcome {
        std::uint64_t ticket;  // the job's place in submission order (1, 2, ...)
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
    // Stops and joins the threads. Jobs not started are dropped (their fds
    // closed); outcomes not taken are dropped too, their children left to the reaper.
    ~Spawner();

    Spawner(const Spawner&) = delete;
    Spawner& operator=(const Spawner&) = delete;

    // Starts the threads (`threads`, at least 1) with every signal blocked. When not even
    // one starts (the errno is returned), submit() spawns on the calling thread instead,
    // as a blocking launch would.
    std::expected<void, int> start(std::size_t threads = k_threads);

    // Queues a prepared launch of run `run` of `service`. Loop thread only.
    void submit(std::size_t service, std::uint64_t run, std::unique_ptr<PreparedLaunch> prepared);

    // The outcomes finished so far (not necessarily in submission order). Loop thread
    // only.
    std::vector<Outcome> take();

    // Blocks until every job submitted so far has finished (its outcome waits in take()).
    // A job is one clone, which returns once the child has exec'd or failed.
    void wait_all();
    // Blocks until every job of `service` submitted so far has finished.
    void wait_service(std::size_t service);

    // Whether a job was submitted whose outcome take() has not returned yet.
    bool busy() const { return !m_unfinished.empty(); }
    // How many such jobs there are: queued, being cloned, or done and not taken.
    std::size_t in_flight() const { return m_unfinished.size(); }

private:
    struct Job {
        std::uint64_t ticket;
        std::size_t service;
        std::uint64_t run;
        std::unique_ptr<PreparedLaunch> prepared;
    };

    void work();
    void wait_until(std::uint64_t ticket);
    static void on_async(uv_async_t* handle);

    Ready m_ready;
    UvHandle<uv_async_t> m_async;
    std::vector<std::thread> m_threads;

    // Shared with the threads, under m_mutex.
    std::mutex m_mutex;
    std::condition_variable m_wake;        // the threads: a job, or stop
    std::condition_variable m_finished;    // waiters: a job finished
    std::deque<Job> m_queue;               // in ticket order
    std::vector<std::uint64_t> m_cloning;  // tickets of the jobs being cloned
    std::vector<Outcome> m_done;
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
