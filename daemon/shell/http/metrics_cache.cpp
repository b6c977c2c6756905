#include "daemon/shell/http/metrics_cache.hpp"

namespace pkit::shell::http {

namespace {

// Samples rendered between two looks at the clock: about 50 µs of work.
constexpr std::size_t k_samples_per_check = 512;
// Rendered text written to the body's file at once.
constexpr std::size_t k_metrics_chunk = 64 * 1024;

}  // namespace

// The pass's work and result; `owner` is null once the cache is gone, and then the
// result is dropped when libuv hands it back.
struct MetricsCache::Pass {
    uv_work_t req{};
    MetricsCache* owner = nullptr;
    MetricsSnapshot snapshot;
    std::shared_ptr<ProcStatCache> stats;
    std::vector<proto::Resources> resources;
};

MetricsCache::MetricsCache(uv_loop_t* loop, std::function<MetricsSnapshot()> snapshot)
    : m_loop(loop),
      m_snapshot(std::move(snapshot)),
      m_next(loop, [this] { slice(); }),
      m_stats(std::make_shared<ProcStatCache>(k_metrics_stat_fds)) {}

MetricsCache::~MetricsCache() {
    if (m_pass != nullptr) {
        m_pass->owner = nullptr;  // a running pass cannot be stopped: it is dropped
        (void)uv_cancel(reinterpret_cast<uv_req_t*>(&m_pass->req));
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
    pass->req.data = pass.get();
    pass->owner = this;
    pass->snapshot = std::move(snapshot);
    pass->stats = m_stats;
    int rc = uv_queue_work(
        m_loop, &pass->req,
        [](uv_work_t* req) {
            // On a pool thread: /proc only, through a cache no other thread uses.
            auto* p = static_cast<Pass*>(req->data);
            try {
                p->resources =
                    read_run_resources(p->snapshot.groups, p->snapshot.cgroups, *p->stats);
                p->snapshot.own = read_own_process();
            } catch (...) {
                p->resources.clear();  // out of memory: the scrape shows no resources
            }
        },
        [](uv_work_t* req, int) {
            std::unique_ptr<Pass> p(static_cast<Pass*>(req->data));
            MetricsCache* self = p->owner;
            if (self == nullptr) {
                return;
            }
            self->m_pass = nullptr;
            try {
                for (std::size_t k = 0; k < p->snapshot.rows.size() && k < p->resources.size();
                     ++k) {
                    p->snapshot.rows[k].resources = p->resources[k];
                }
                self->resources_read(std::move(p->snapshot));
            } catch (...) {
                // Never into libuv.
            }
        });
    if (rc != 0) {
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
