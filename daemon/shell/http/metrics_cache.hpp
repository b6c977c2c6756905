#pragma once
// /metrics for every scraper of one listener: one render shared by all who ask while
// it is under way and, once done, reused for k_metrics_cache_ms, so N scrapers cost
// one render and get identical bodies. Nothing of it holds the loop long, however
// many services (and processes) there are: the services' values are copied on the
// loop (snapshot_metrics, linear and cheap), the pass over /proc/*/stat for their
// resources runs on libuv's thread pool (ResourcesPass: two of its threads, each a share
// of the processes), and the text is rendered in slices of at most k_metrics_slice_ns,
// one a turn of the loop, each writing what it rendered to the body's memfd (Exposition)
// 64 KiB at a time.

#include <uv.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/shell/cgroup/resources_pass.hpp"
#include "daemon/shell/http/exposition.hpp"
#include "daemon/shell/http/metrics.hpp"
#include "daemon/shell/uv_handle.hpp"

namespace pkit::shell::http {

// How long a finished exposition is served again, from the moment its snapshot was
// taken: a Prometheus scrape interval is seconds, so a scrape is at most this stale.
inline constexpr std::uint64_t k_metrics_cache_ms = 1'000;
// The longest a render holds the loop in one turn (the snapshot, taken in one go,
// aside).
inline constexpr std::uint64_t k_metrics_slice_ns = 2'000'000;

class MetricsCache {
public:
    using Body = std::shared_ptr<const Exposition>;
    using Deliver = std::function<void(Body)>;

    // `snapshot` takes what a scrape shows, at the moment it is called.
    MetricsCache(uv_loop_t* loop, std::function<MetricsSnapshot()> snapshot);
    ~MetricsCache();
    MetricsCache(const MetricsCache&) = delete;
    MetricsCache& operator=(const MetricsCache&) = delete;

    // The cached body when it is fresh. Otherwise nullopt, and `deliver` is called with
    // the body of the render under way (started now if none is) on a later turn;
    // `ticket` then identifies the wait for cancel().
    std::optional<Body> request(Deliver deliver, std::uint64_t& ticket);
    // Forgets a wait: its `deliver` is never called.
    void cancel(std::uint64_t ticket) { m_waiters.erase(ticket); }
    // Drops the finished body (a reload changed what a scrape shows): the next scrape
    // renders afresh. A render under way finishes for those who asked before.
    void invalidate() { m_body.reset(); }

    // Renders begun since construction (for tests and figures).
    std::uint64_t renders() const { return m_renders; }

private:
    void start_render();
    void resources_read(MetricsSnapshot snapshot);
    void slice();

    uv_loop_t* m_loop;
    std::function<MetricsSnapshot()> m_snapshot;
    NextTurn m_next;
    bool m_busy = false;                      // a render (its pass or its slices) under way
    ResourcesPass* m_pass = nullptr;          // frees itself once done
    std::unique_ptr<MetricsRender> m_render;  // the slices under way, if any
    std::shared_ptr<Exposition> m_writing;    // their text, written as they go
    std::uint64_t m_render_started_ms = 0;
    Body m_body;  // the last finished exposition
    std::uint64_t m_body_taken_ms = 0;
    std::map<std::uint64_t, Deliver> m_waiters;  // by ticket, in order of asking
    std::uint64_t m_next_ticket = 1;
    std::uint64_t m_renders = 0;
};

}  // namespace pkit::shell::http
