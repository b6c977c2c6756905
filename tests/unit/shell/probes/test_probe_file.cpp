// File probes: fresh when modified within 2 × interval, stale or missing otherwise;
// the result still comes from the loop, never from inside run().

#include <sys/stat.h>
#include <utime.h>

#include <algorithm>
#include <ctime>

#include "tests/unit/shell/probes/test_probe_support.hpp"

namespace pkit::shell::test {

TEST_CASE("file probe: fresh within 2 x interval, stale beyond, missing fails") {
    TestLoop loop;
    TempDir dir;
    std::string fresh = dir.write("fresh", "x");
    std::string stale = dir.write("stale", "x");
    utimbuf old{};
    old.actime = old.modtime = std::time(nullptr) - 12;
    REQUIRE(utime(stale.c_str(), &old) == 0);
    {
        ProbeHarness harness(loop);
        auto probe_fresh = config::ProbeSpec(probe_of(config::ProbeKind::file, fresh));
        auto probe_stale = probe_of(config::ProbeKind::file, stale);
        probe_stale.interval = 5s;  // stale after 10 s
        auto probe_missing = probe_of(config::ProbeKind::file, dir.path() + "/missing");
        harness.run(probe_fresh, 1);
        harness.run(probe_stale, 2);
        harness.run(probe_missing, 3);
        REQUIRE(harness.wait_results(3));
        CHECK_FALSE(harness.called_inside_run);
        for (const auto& result : harness.results) {
            CAPTURE(result.detail);
            if (result.service == 1) {
                CHECK(result.ok);
                CHECK(result.detail.starts_with("modified "));
            } else if (result.service == 2) {
                CHECK_FALSE(result.ok);
                CHECK((result.detail == "stale: modified 12s ago" ||
                       result.detail == "stale: modified 13s ago"));
            } else {
                CHECK_FALSE(result.ok);
                CHECK(result.detail == "cannot stat: no such file or directory");
            }
        }
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("probe kinds that cannot run still answer once, from the loop") {
    TestLoop loop;
    {
        ProbeHarness harness(loop);
        config::ProbeSpec watchdog;
        watchdog.kind = config::ProbeKind::watchdog;
        auto bad_url = probe_of(config::ProbeKind::http, "https://example.com/");
        harness.run(watchdog, 1);
        harness.run(bad_url, 2);
        REQUIRE(harness.wait_results(2));
        CHECK_FALSE(harness.called_inside_run);
        CHECK_FALSE(harness.results[0].ok);
        CHECK_FALSE(harness.results[1].ok);
        CHECK(harness.results[1].detail == "bad http target \"https://example.com/\"");
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("a result callback may start the next attempt and cancel others") {
    TestLoop loop;
    TempDir dir;
    std::string file = dir.write("beat", "x");
    {
        std::vector<bool> results;
        std::unique_ptr<ProbeRunner> runner;
        auto probe = probe_of(config::ProbeKind::file, file);
        runner = std::make_unique<ProbeRunner>(
            loop.get(),
            [&](std::size_t service, std::uint64_t, core::ProbePurpose, bool ok, std::string) {
                results.push_back(ok);
                runner->cancel(service + 1);
                if (results.size() < 3) {
                    runner->run(
                        ProbeRequest{service, 2, core::ProbePurpose::ready, &probe, nullptr, 1s});
                }
            });
        runner->run(ProbeRequest{0, 1, core::ProbePurpose::ready, &probe, nullptr, 1s});
        runner->run(ProbeRequest{1, 1, core::ProbePurpose::ready, &probe, nullptr, 1s});
        CHECK(loop.run_until([&] { return results.size() >= 3 && runner->in_flight() == 0; }));
        CHECK(std::count(results.begin(), results.end(), true) ==
              static_cast<std::ptrdiff_t>(results.size()));
    }
    CHECK(loop.close() == 0);
}

}  // namespace pkit::shell::test

namespace pkit::shell::test {

TEST_CASE("a probe target's variables expand in the run's environment at each attempt") {
    TestLoop loop;
    TempDir dir;
    dir.write("flag-1", "x");
    config::ServiceSpec spec;
    spec.name = "svc";
    spec.process.edit().env = {{"FLAG_DIR", dir.path()}};
    {
        ProbeHarness harness(loop);
        // PKIT_INSTANCE is 1 for a service without instances.
        auto found = probe_of(config::ProbeKind::file, "${FLAG_DIR}/flag-${PKIT_INSTANCE}");
        auto undefined = probe_of(config::ProbeKind::file, "${FLAG_DIR}/${PKIT_TEST_NO_SUCH}");
        harness.run(found, 1, &spec);
        harness.run(undefined, 2, &spec);
        REQUIRE(harness.wait_results(2));
        for (const auto& result : harness.results) {
            CAPTURE(result.detail);
            if (result.service == 1) {
                CHECK(result.ok);
            } else {
                CHECK_FALSE(result.ok);
                CHECK(result.detail.starts_with("undefined_variable: PKIT_TEST_NO_SUCH: "));
            }
        }
    }
    CHECK(loop.close() == 0);
}

}  // namespace pkit::shell::test
