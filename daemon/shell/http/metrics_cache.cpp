#include "daemon/shell/http/metrics_cache.hpp"

#include <algorithm>
#include <atomic>

#include "daemon/shell/cgroup/run_resources.hpp"

namespace pkit::shell::http {

namespace {

// Samples rendered between two looks at the clock: about 50 µs of work.
constexpr std::size_t k_samples_per_check = 512;
// Rendered text written to the body's file at once.
constexpr std::size_t k_metrics_chunk = 64 * 1024;

}  // namespace

// The pass's work and result; `owner` is null once the cache is gone, and then the
// result is dropped when libuv hands it back. The pass is split in shares (ProcShare),
// one work item a share; each item takes the next share not yet taken, so that a share
// is read even when its own item never runs, and the one that ends the last share adds
// them up.
struct MetricsCache::Pass {
    struct Work {
        uv_work_t req{};
        Pass* pass = nullptr;
    };
    MetricsCache* owner = nullptr;
    MetricsSnapshot snapshot;
    std::shared_ptr<StatCaches> stats;  // one a share
    std::vector<GroupScan> scans;       // one a share
    std::vector<Work> works;            // one a share; those queued
    unsigned share_count = 0;           // set before any item is queued
    std::atomic<unsigned> next_share{0};
    std::atomic<unsigned> shares_left{0};
    unsigned works_left = 0;  // queued items whose after_work has not run (loop thread)
    std::vector<proto::Resources> resources;

    // On a pool thread: reads shares until none is left.
    void scan_shares() {
        // `scans` is touched only for a share taken here: the last share's finish()
        // moves it while another item may still be looking for one.
        const unsigned count = share_count;
        for (unsigned k = next_share++; k < count; k = next_share++) {
            try {
                scans[k] =
                    scan_group_resources(snapshot.groups, *(*stats)[k], {k, count},
                                         runs_have_cgroups(snapshot.groups, snapshot.cgroups));
            } catch (...) {
                scans[k] = {};  // out of memory: this share shows nothing
            }
            if (--shares_left == 0) {
                finish();
            }
        }
    }
    // On the loop, once for each queued item: after the last, hands the result over.
    void work_done() {
        if (--works_left > 0) {
            return;
        }
        std::unique_ptr<Pass> self(this);
        MetricsCache* cache = owner;
        if (cache == nullptr) {
            return;
        }
        cache->m_pass = nullptr;
        try {
            for (std::size_t k = 0; k < snapshot.rows.size() && k < resources.size(); ++k) {
                snapshot.rows[k].resources = resources[k];
            }
            cache->resources_read(std::move(snapshot));
        } catch (...) {
            // Never into libuv.
        }
    }
    void finish() {
        try {
            resources = finish_run_resources(snapshot.groups, snapshot.cgroups, std::move(scans));
            snapshot.own = read_own_process();
        } catch (...) {
            resources.clear();  // out of memory: the scrape shows no resources
        }
    }
};

namespace {

std::shared_ptr<MetricsCache::StatCaches> stat_caches() {
    const unsigned shares = std::clamp(uv_available_parallelism(), 1U, k_metrics_pass_threads);
    auto caches = std::make_shared<MetricsCache::StatCaches>();
    for (unsigned k = 0; k < shares; ++k) {
        caches->push_back(std::make_unique<ProcStatCache>(k_metrics_stat_fds / shares));
    }
    return caches;
}

}  // namespace

MetricsCache::MetricsCache(uv_loop_t* loop, std::function<MetricsSnapshot()> snapshot)
    : m_loop(loop),
      m_snapshot(std::move(snapshot)),
      m_next(loop, [this] { slice(); }),
      m_stats(stat_caches()) {}

MetricsCache::~MetricsCache() {
    if (m_pass != nullptr) {
        m_pass->owner = nullptr;  // a running pass cannot be stopped: it is dropped
        for (auto& work : m_pass->works) {
            (void)uv_cancel(reinterpret_cast<uv_req_t*>(&work.req));
        }
    }
}

std::optional<MetricsCache::Body> MetricsCache::request(Deliver deliver, std::uint64_t& ticket) {
    uv_update_time(m_loop);
    const std::uint64_t now = uv_now(m_loop);
    if (m_body && !m_busy && now - m_body_taken_ms < k_metrics_cache_ms) {
        return m_body;
    }
    if (!m_busy) {
        m_busy = true;
        m_render_started_ms = now;
        ++m_renders;
        start_render();
    }
    ticket = m_next_ticket++;
    m_waiters.emplace(ticket, std::move(deliver));
    return std::nullopt;
}

void MetricsCache::start_render() {
    MetricsSnapshot snapshot = m_snapshot();
    if (snapshot.groups.empty()) {
        // No run to read: pkitd's own figures only (two small /proc reads).
        snapshot.own = read_own_process();
        resources_read(std::move(snapshot));
        return;
    }
    auto pass = std::make_unique<Pass>();
    pass->owner = this;
    pass->snapshot = std::move(snapshot);
    pass->stats = m_stats;
    const std::size_t shares = m_stats->size();
    pass->scans.resize(shares);
    pass->works.resize(shares);
    pass->share_count = static_cast<unsigned>(shares);
    pass->shares_left = pass->share_count;
    for (auto& work : pass->works) {
        work.req.data = &work;
        work.pass = pass.get();
        int rc = uv_queue_work(
            m_loop, &work.req,
            [](uv_work_t* req) { static_cast<Pass::Work*>(req->data)->pass->scan_shares(); },
            [](uv_work_t* req, int) { static_cast<Pass::Work*>(req->data)->pass->work_done(); });
        if (rc != 0) {
            break;  // the items queued read every share
        }
        ++pass->works_left;
    }
    if (pass->works_left == 0) {
        resources_read(std::move(pass->snapshot));  // no pool: no resources this time
        return;
    }
    m_pass = pass.release();
}

void MetricsCache::resources_read(MetricsSnapshot snapshot) {
    snapshot.groups.clear();
    snapshot.cgroups.clear();
    m_render = std::make_unique<MetricsRender>(std::move(snapshot));
    m_writing = std::make_shared<Exposition>();
    m_next.schedule();
}

void MetricsCache::slice() {
    if (!m_render) {
        return;
    }
    const std::uint64_t begin = uv_hrtime();
    bool done = false;
    while (!done && uv_hrtime() - begin < k_metrics_slice_ns) {
        done = m_render->step(k_samples_per_check);
        if (done || m_render->text().size() >= k_metrics_chunk) {
            m_writing->append(m_render->text());
            m_render->clear_text();
        }
    }
    if (!done) {
        m_next.schedule();
        return;
    }
    m_writing->seal();
    m_body = std::move(m_writing);
    m_body_taken_ms = m_render_started_ms;
    m_render.reset();
    m_busy = false;
    // A waiter may cancel others or ask again (a pipelined scrape): take them all first.
    auto waiters = std::move(m_waiters);
    m_waiters.clear();
    for (auto& [ticket, deliver] : waiters) {
        deliver(m_body);
    }
}

}  // namespace pkit::shell::http
