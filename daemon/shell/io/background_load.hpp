#pragma once
// Loads a configuration tree on a libuv worker thread (uv_queue_work), so that a
// reload's reading and validation never run on the loop; only the result is handed
// back to the loop.
//
// The worker gets its own copies of the directory and the options and writes only
// into its job, which libuv owns until the after-work callback; config::load_tree()
// shares no mutable state. Destroying the BackgroundLoad while a load is under way
// detaches the job: its result is dropped when libuv hands it back (or never, if the
// loop does not run again), and `done` is not called.

#include <uv.h>

#include <expected>
#include <functional>
#include <memory>
#include <string>

#include "config/loader.hpp"

namespace pkit::shell {

class BackgroundLoad {
public:
    using Done = std::function<void(config::LoadResult)>;

    explicit BackgroundLoad(uv_loop_t* loop) : m_loop(loop) {}
    ~BackgroundLoad();

    BackgroundLoad(const BackgroundLoad&) = delete;
    BackgroundLoad& operator=(const BackgroundLoad&) = delete;

    // A load is under way: start() must wait.
    bool busy() const { return m_job != nullptr; }

    // Queues load_tree(dir, options, cache) on the thread pool; `done` runs on the loop
    // with its result, never from inside this call. Requires !busy(). The error is
    // libuv's when the work cannot be queued (`done` is then dropped). The job shares
    // `cache` (null: none), which outlives a detached job that still runs.
    std::expected<void, std::string> start(std::string dir, config::LoadOptions options,
                                           std::shared_ptr<config::LoadCache> cache, Done done);

    // Frees what a reload left of its tree (the specs the supervisor already had) on
    // the thread pool, where they were made: 10,000 of them take a millisecond or two
    // the loop need not spend. Freed here when the work cannot be queued.
    static void discard(uv_loop_t* loop, config::Tree tree);

private:
    struct Job;
    static void work(uv_work_t* req);
    static void after_work(uv_work_t* req, int status);

    uv_loop_t* m_loop;
    Job* m_job = nullptr;  // owned by libuv while queued
};

}  // namespace pkit::shell
