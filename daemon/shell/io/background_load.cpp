#include "daemon/shell/io/background_load.hpp"

#include <malloc.h>

#include <memory>
#include <optional>

namespace pkit::shell {

struct BackgroundLoad::Job {
    uv_work_t req{};
    std::string dir;
    config::LoadOptions options;
    std::shared_ptr<config::LoadCache> cache;
    Done done;
    BackgroundLoad* owner = nullptr;  // null once detached
    std::optional<config::LoadResult> result;
};

BackgroundLoad::~BackgroundLoad() {
    if (m_job != nullptr) {
        m_job->owner = nullptr;
        // Not yet started: the after-work callback then runs with UV_ECANCELED and
        // frees the job. Already running: it frees the job when the loop next runs.
        (void)uv_cancel(reinterpret_cast<uv_req_t*>(&m_job->req));
        m_job = nullptr;
    }
}

std::expected<void, std::string> BackgroundLoad::start(std::string dir, config::LoadOptions options,
                                                       std::shared_ptr<config::LoadCache> cache,
                                                       Done done) {
    auto job = std::make_unique<Job>();
    job->req.data = job.get();
    job->dir = std::move(dir);
    job->options = options;
    job->cache = std::move(cache);
    job->done = std::move(done);
    job->owner = this;
    int rc = uv_queue_work(m_loop, &job->req, &BackgroundLoad::work, &BackgroundLoad::after_work);
    if (rc != 0) {
        return std::unexpected(std::string(uv_strerror(rc)));
    }
    m_job = job.release();
    return {};
}

void BackgroundLoad::discard(uv_loop_t* loop, config::Tree tree) {
    struct Discard {
        uv_work_t req{};
        config::Tree tree;
    };
    auto job = std::make_unique<Discard>();
    job->req.data = job.get();
    job->tree = std::move(tree);
    // Freed off the loop, and the pages it held given back (services removed by reloads
    // would otherwise leave the heap a little larger each time, issue 44).
    auto work = [](uv_work_t* req) {
        static_cast<Discard*>(req->data)->tree = {};
        ::malloc_trim(0);
    };
    auto after = [](uv_work_t* req, int) { delete static_cast<Discard*>(req->data); };
    if (uv_queue_work(loop, &job->req, work, after) == 0) {
        job.release();  // libuv's until `after`
    }
}

// On a worker thread: touches only the job.
void BackgroundLoad::work(uv_work_t* req) {
    Job* job = static_cast<Job*>(req->data);
    try {
        job->result = config::load_tree(job->dir, job->options, job->cache.get());
    } catch (...) {
        // load_tree() reports even resource exhaustion as a diagnostic; should
        // anything escape it, the result stays empty and counts as a failed load.
    }
}

// On the loop.
void BackgroundLoad::after_work(uv_work_t* req, int status) {
    std::unique_ptr<Job> job(static_cast<Job*>(req->data));
    if (job->owner == nullptr) {
        return;  // detached: nobody waits any more
    }
    job->owner->m_job = nullptr;
    if (status != 0 || !job->result) {
        std::string why = status != 0 ? uv_strerror(status) : "the loader failed";
        job->result = std::unexpected(std::vector<config::Diagnostic>{
            {job->dir, 1, 1, "cannot load the configuration: " + why}});
    }
    try {
        job->done(std::move(*job->result));
    } catch (...) {
        // Never into libuv; `done` handles its own failures.
    }
}

}  // namespace pkit::shell
