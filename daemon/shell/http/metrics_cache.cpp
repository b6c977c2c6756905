#include "daemon/shell/http/metrics_cache.hpp"

namespace pkit::shell::http {

namespace {

// Samples rendered between two looks at the clock: about 50 µs of work.
constexpr std::size_t k_samples_per_check = 512;

}  // namespace

MetricsCache::MetricsCache(uv_loop_t* loop, std::function<MetricsSnapshot()> snapshot)
    : m_loop(loop), m_snapshot(std::move(snapshot)), m_next(loop, [this] { slice(); }) {}

std::optional<MetricsCache::Body> MetricsCache::request(Deliver deliver, std::uint64_t& ticket) {
    uv_update_time(m_loop);
    const std::uint64_t now = uv_now(m_loop);
    if (m_body && !m_render && now - m_body_taken_ms < k_metrics_cache_ms) {
        return m_body;
    }
    if (!m_render) {
        m_render = std::make_unique<MetricsRender>(m_snapshot());
        m_render_started_ms = now;
        ++m_renders;
        m_next.schedule();
    }
    ticket = m_next_ticket++;
    m_waiters.emplace(ticket, std::move(deliver));
    return std::nullopt;
}

void MetricsCache::slice() {
    if (!m_render) {
        return;
    }
    const std::uint64_t begin = uv_hrtime();
    bool done = false;
    while (!done && uv_hrtime() - begin < k_metrics_slice_ns) {
        done = m_render->step(k_samples_per_check);
    }
    if (!done) {
        m_next.schedule();
        return;
    }
    m_body = std::make_shared<const std::string>(m_render->take());
    m_body_taken_ms = m_render_started_ms;
    m_render.reset();
    // A waiter may cancel others or ask again (a pipelined scrape): take them all first.
    auto waiters = std::move(m_waiters);
    m_waiters.clear();
    for (auto& [ticket, deliver] : waiters) {
        deliver(m_body);
    }
}

}  // namespace pkit::shell::http
