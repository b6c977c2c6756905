// MetricsCache on a real loop: scrapers that ask together share one render, which is
// delivered on a later turn in slices; a finished body is served again for 1 s; the
// resources pass, split among pool threads, counts every process of a group; a cache
// destroyed while its pass runs drops the pass's result.

#include "tests/unit/shell/shell_test.hpp"

#include "daemon/shell/http/metrics_cache.hpp"

namespace pkit::shell::http {
namespace {

using test::MixedGroup;
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
        // the render itself can outlast it: then it is rendered afresh). The request
        // reads the clock itself, so its answer is checked against the clock after it.
        std::uint64_t ticket = 0;
        bool rendered_again = false;
        auto again = cache.request([&](MetricsCache::Body) { rendered_again = true; }, ticket);
        uv_update_time(loop.get());
        if (again) {
            CHECK(*again == got[0]);
            CHECK(snapshots == 1);
            CHECK(cache.renders() == 1);
        } else {
            // Only a body older than the bound is rendered again.
            CHECK(uv_now(loop.get()) - asked_ms >= k_metrics_cache_ms);
            REQUIRE(loop.run_until([&] { return rendered_again; }));
            CHECK(snapshots == 2);
        }
    }
    CHECK(loop.close() == 0);
}

}  // namespace

TEST_CASE("metrics cache: the resources pass counts a group's processes, whatever their pids") {
    MixedGroup group;
    TestLoop loop;
    {
        MetricsCache cache(loop.get(), [&] {
            MetricsSnapshot snap = snapshot_of(3, 1);
            snap.groups = {group.pgid(), 0, 999999999};
            return snap;
        });
        MetricsCache::Body body;
        std::uint64_t ticket = 0;
        CHECK_FALSE(cache.request([&](MetricsCache::Body b) { body = std::move(b); }, ticket));
        REQUIRE(loop.run_until([&] { return body != nullptr; }));
        const std::string text(body->bytes());
        CHECK_MESSAGE(text.find("pkit_service_processes{service=\"s0\"} " +
                                std::to_string(group.size()) + "\n") != std::string::npos,
                      text.substr(0, 4000));
        CHECK(text.find("pkit_service_processes{service=\"s1\"} 0\n") != std::string::npos);
        CHECK(text.find("pkit_service_processes{service=\"s2\"} 0\n") != std::string::npos);
        CHECK(text.find("process_open_fds ") != std::string::npos);  // pkitd's own, read too
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("metrics cache: destroyed while its pass runs, the pass's result is dropped") {
    MixedGroup group;
    TestLoop loop;
    bool delivered = false;
    {
        MetricsCache cache(loop.get(), [&] {
            MetricsSnapshot snap = snapshot_of(1, 1);
            snap.groups = {group.pgid()};
            return snap;
        });
        std::uint64_t ticket = 0;
        CHECK_FALSE(cache.request([&](MetricsCache::Body) { delivered = true; }, ticket));
    }
    // The pass's items are cancelled or run to their end; either way libuv hands them
    // back, and nothing is delivered to the scraper of a cache that is gone.
    uv_run(loop.get(), UV_RUN_DEFAULT);
    CHECK_FALSE(delivered);
    CHECK(loop.close() == 0);
}

}  // namespace pkit::shell::http
