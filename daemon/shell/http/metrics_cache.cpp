#include "daemon/shell/http/metrics_cache.hpp"

namespace pkit::shell::http {

namespace {

// Samples rendered between two looks at the clock: about 50 µs of work.
constexpr std::size_t k_samples_per_check = 512;
// Rendered text written to the body's file at once.
constexpr std::size_t k_metrics_chunk = 64 * 1024;

}  // namespace

MetricsCache::MetricsCache(uv_loop_t* loop, std::function<MetricsSnapshot()> snapshot)
    : m_loop(loop), m_snapshot(std::move(snapshot)), m_next(loop, [this] { slice(); }) {}

MetricsCache::~MetricsCache() {
    if (m_pass != nullptr) {
        m_pass->abandon();  // a running pass cannot be stopped: its result is dropped
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
    std::vector<pid_t> groups = std::move(snapshot.groups);
    std::vector<RunCgroupRead> cgroups = std::move(snapshot.cgroups);
    // Shared, not copied: the rows of 10,000 services wait for the pass.
    auto rest = std::make_shared<MetricsSnapshot>(std::move(snapshot));
    auto done = [this, rest](std::vector<proto::Resources> resources,
                             std::optional<OwnProcess> own) {
        m_pass = nullptr;
        for (std::size_t k = 0; k < rest->rows.size() && k < resources.size(); ++k) {
            rest->rows[k].resources = resources[k];
        }
        rest->own = std::move(own);
        resources_read(std::move(*rest));
    };
    m_pass = ResourcesPass::start(m_loop, std::move(groups), std::move(cgroups), true, done);
    if (m_pass == nullptr) {
        done({}, std::nullopt);  // no pool: no resources this time
    }
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
