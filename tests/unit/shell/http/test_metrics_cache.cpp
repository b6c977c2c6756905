// MetricsCache on a real loop: scrapers that ask together share one render, which is
// delivered on a later turn in slices; a finished body is served again for 1 s.

#include "tests/unit/shell/shell_test.hpp"

#include "daemon/shell/http/metrics_cache.hpp"

namespace pkit::shell::http {
namespace {

using test::TestLoop;

MetricsSnapshot snapshot_of(std::size_t services, int runs) {
    MetricsSnapshot snap;
    snap.version = "test";
    for (std::size_t i = 0; i < services; ++i) {
        MetricsRow row;
        row.labels = "{service=\"s" + std::to_string(i) + "\"";
        row.runs = runs;
        snap.rows.push_back(std::move(row));
    }
    return snap;
}

TEST_CASE("metrics cache: scrapers asking together share one render and its body") {
    TestLoop loop;
    {
        int snapshots = 0;
        MetricsCache cache(loop.get(), [&] { return snapshot_of(20'000, ++snapshots); });
        std::vector<MetricsCache::Body> got(3);
        std::uint64_t tickets[3] = {};
        const std::uint64_t asked_ms = uv_now(loop.get());  // the loop time the cache reads
        for (int i = 0; i < 3; ++i) {
            auto now = cache.request([&got, i](MetricsCache::Body b) { got[i] = std::move(b); },
                                     tickets[i]);
            CHECK_FALSE(now);  // never rendered in the caller's turn
        }
        CHECK(snapshots == 1);
        cache.cancel(tickets[2]);
        REQUIRE(loop.run_until([&] { return got[0] != nullptr; }));
        CHECK(got[1] == got[0]);   // the same shared string
        CHECK(got[2] == nullptr);  // cancelled
        CHECK(got[0]->bytes().find("pkit_service_runs_total{service=\"s19999\"} 1\n") !=
              std::string::npos);
        // A scrape right after gets the same body at once, without a render, while the
        // body is under k_metrics_cache_ms old by the loop's clock (on a loaded machine
        // the render itself can outlast it: then it is rendered afresh).
        const bool fresh = uv_now(loop.get()) - asked_ms < k_metrics_cache_ms;
        std::uint64_t ticket = 0;
        bool rendered_again = false;
        auto again = cache.request([&](MetricsCache::Body) { rendered_again = true; }, ticket);
        if (fresh) {
            REQUIRE(again);
            CHECK(*again == got[0]);
            CHECK(snapshots == 1);
            CHECK(cache.renders() == 1);
        } else {
            CHECK_FALSE(again);
            REQUIRE(loop.run_until([&] { return rendered_again; }));
            CHECK(snapshots == 2);
        }
    }
    CHECK(loop.close() == 0);
}

}  // namespace
}  // namespace pkit::shell::http
