// A child writing 100 MB (SPEC §4): pkitd always drains the pipes, so the child is never
// blocked, the tails stay bounded, and forwarding never blocks the loop, whether
// pkitd's stdout is drained, or stalls.

#include <algorithm>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

constexpr long k_rss_limit_kb = 64 * 1024;

// 1,000,000 lines of 100 'x' (100 MB), then exit 0.
const std::string k_flood = "head -c 100000000 /dev/zero | tr '\\0' 'x' | fold -w 100";

// Waits until `svc` is done, sampling pkitd's VmRSS meanwhile; returns the peak (kB).
long peak_rss_until_done(Daemon& pkitd) {
    Client client = pkitd.client();
    long peak = 0;
    json last;
    wait_for(
        [&] {
            peak = std::max(peak, rss_kb(pkitd.pid()).value_or(0));
            last = status(client, "svc");
            return last["state"] == "done";
        },
        45s, "the 100 MB run to end", [&] { return last.dump(); });
    return peak;
}

void flood_service(const TempDir& dir, const std::string& forward) {
    dir.service("svc", sh_command(k_flood) + "[output]\nforward = \"" + forward + "\"\n");
}

// The tail holds the last lines, bounded by the defaults (1000 lines, 256 KiB).
void check_tail(Daemon& pkitd) {
    Client client = pkitd.client();
    json reply = client.request({{"cmd", "logs"}, {"service", "svc"}, {"lines", 5000}});
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    const auto lines = texts(reply["result"]);
    CHECK(reply["result"]["truncated"] == true);
    CHECK(!lines.empty());
    CHECK(lines.size() <= 1000);
    CHECK(lines.size() * 100 <= 256 * 1024);
    CHECK(std::all_of(lines.begin(), lines.end(),
                      [](const std::string& l) { return l == std::string(100, 'x'); }));
}

}  // namespace

TEST_CASE("a child writing 100 MB is never blocked and pkitd stays under 64 MB") {
    TempDir dir;
    SUBCASE("forward = none") {
        flood_service(dir, "none");
        Daemon pkitd(dir);
        pkitd.wait_ready();
        const long peak = peak_rss_until_done(pkitd);
        CHECK_MESSAGE(peak < k_rss_limit_kb, "peak VmRSS " << peak << " kB");
        check_tail(pkitd);
        CHECK(pkitd.stop() == 0);
    }
    SUBCASE("forward = prefix, pkitd's stdout a pipe the harness drains") {
        flood_service(dir, "prefix");
        Daemon pkitd(dir, {.stdout_mode = StdoutMode::drained_pipe});
        pkitd.wait_ready();
        const long peak = peak_rss_until_done(pkitd);
        CHECK_MESSAGE(peak < k_rss_limit_kb, "peak VmRSS " << peak << " kB");
        check_tail(pkitd);
        CHECK(pkitd.stop() == 0);
        // Forwarded lines are "svc | xxx..."; some may have been dropped, not reshaped.
        const std::string tail = pkitd.out();
        CHECK(pkitd.out_bytes() > 1'000'000);
        CHECK(tail.find("svc | " + std::string(100, 'x') + "\n") != std::string::npos);
    }
    SUBCASE("forward = prefix, pkitd's stdout a pipe nobody reads") {
        flood_service(dir, "prefix");
        Daemon pkitd(dir, {.stdout_mode = StdoutMode::stalled_pipe});
        pkitd.wait_ready();
        const long peak = peak_rss_until_done(pkitd);
        CHECK_MESSAGE(peak < k_rss_limit_kb, "peak VmRSS " << peak << " kB");
        check_tail(pkitd);
        CHECK(pkitd.stop() == 0);
    }
}
