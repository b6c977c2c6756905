// Exec probes: exit 0 is healthy, anything else is not; a probe over its timeout loses
// its whole process group, and so does a probe whose main process exited but left
// children behind; cancel() drops attempts without a callback.

#include <unistd.h>

#include "tests/unit/shell/probes/test_probe_support.hpp"

namespace pkit::shell::test {

TEST_CASE("exec probe: exit 0 is healthy, exit 1 is not, both reported as exits") {
    TestLoop loop;
    {
        ProbeHarness harness(loop);
        auto ok = exec_probe({"true"});
        auto bad = exec_probe({"/bin/sh", "-c", "echo noise; echo more >&2; exit 1"});
        harness.run(ok, 1);
        harness.run(bad, 2);
        CHECK(harness.runner.in_flight() == 2);
        REQUIRE(harness.wait_results(2));
        CHECK_FALSE(harness.called_inside_run);
        for (const auto& result : harness.results) {
            CHECK(result.run == 1);
            CHECK(result.purpose == core::ProbePurpose::health);
            if (result.service == 1) {
                CHECK(result.ok);
                CHECK(result.detail == "exit 0");
            } else {
                CHECK_FALSE(result.ok);
                CHECK(result.detail == "exit 1");
            }
        }
        CHECK(harness.runner.in_flight() == 0);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("exec probe runs with the service's environment and cwd, argv[0] found in its PATH") {
    TestLoop loop;
    TempDir dir;
    {
        ProbeHarness harness(loop);
        auto spec = make_spec({"/bin/false"});
        spec.process.edit().env["PROBE_VAR"] = "from-service";
        spec.process.edit().cwd = dir.path();
        auto probe = exec_probe({"sh", "-c",
                                 "test \"$PROBE_VAR\" = from-service && test \"$(pwd)\" = \"$1\"",
                                 "sh", dir.path()});
        harness.run(probe, 0, &spec);
        auto result = harness.single();
        CHECK(result.ok);
        CHECK(result.detail == "exit 0");
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("exec probe: a launch failure is a failed attempt named like a run's, never from run()") {
    TestLoop loop;
    {
        ProbeHarness harness(loop);
        auto probe = exec_probe({"no-such-probe-binary"});
        harness.run(probe);
        auto result = harness.single();
        CHECK_FALSE(result.ok);
        CHECK(result.detail.starts_with("not_found: "));
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("exec probe: at its timeout the whole process group is killed and no process is left") {
    TestLoop loop;
    TempDir dir;
    std::string pid_file = dir.path() + "/pid";
    {
        ProbeHarness harness(loop);
        auto probe = exec_probe(
            {"/bin/sh", "-c", "echo $$$$ > \"$1\"; sleep 100 & sleep 100", "sh", pid_file});
        auto started = std::chrono::steady_clock::now();
        harness.run(probe, 0, nullptr, 200ms);
        auto result = harness.single();
        auto took = std::chrono::steady_clock::now() - started;
        CHECK_FALSE(result.ok);
        CHECK(result.detail == "timed out after 200ms");
        CHECK(took >= 190ms);
        CHECK(took < 5s);
        pid_t pgid = read_pid(pid_file);
        REQUIRE(pgid > 0);
        CHECK(loop.run_until([&] { return group_gone(pgid); }, 5s));
        CHECK(harness.runner.unreaped() == 0);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("exec probe: children left behind by a probe that exited are killed with its group") {
    TestLoop loop;
    TempDir dir;
    std::string pid_file = dir.path() + "/pid";
    {
        ProbeHarness harness(loop);
        auto probe =
            exec_probe({"/bin/sh", "-c", "echo $$$$ > \"$1\"; sleep 100 & exit 0", "sh", pid_file});
        harness.run(probe, 0, nullptr, 5s);
        auto result = harness.single();
        CHECK(result.ok);
        pid_t pgid = read_pid(pid_file);
        REQUIRE(pgid > 0);
        CHECK(loop.run_until([&] { return group_gone(pgid); }, 5s));
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("cancel drops a service's attempts without a callback and kills its exec probes") {
    TestLoop loop;
    TempDir dir;
    std::string pid_file = dir.path() + "/pid";
    {
        ProbeHarness harness(loop);
        auto slow = exec_probe({"/bin/sh", "-c", "echo $$$$ > \"$1\"; sleep 100", "sh", pid_file});
        auto file = probe_of(config::ProbeKind::file, dir.path());
        auto other = exec_probe({"true"});
        harness.run(slow, 7, nullptr, 10s);
        REQUIRE(loop.run_until([&] { return read_pid(pid_file) > 0; }, 5s));
        harness.run(file, 7);
        harness.run(other, 8);
        CHECK(harness.runner.in_flight() == 3);
        harness.runner.cancel(7);
        CHECK(harness.runner.in_flight() == 1);
        CHECK(harness.runner.unreaped() == 1);
        REQUIRE(harness.wait_results(1));
        CHECK(loop.run_until([&] { return group_gone(read_pid(pid_file)); }, 5s));
        // Give a late callback of the cancelled attempts every chance to show up.
        Timer settle(loop.get());
        bool settled = false;
        settle.start(100, [&] { settled = true; });
        CHECK(loop.run_until([&] { return settled; }));
        REQUIRE(harness.results.size() == 1);
        CHECK(harness.results.front().service == 8);
        CHECK(harness.runner.in_flight() == 0);
        CHECK(harness.runner.unreaped() == 0);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("destroying the runner kills exec probes in flight") {
    TestLoop loop;
    TempDir dir;
    std::string pid_file = dir.path() + "/pid";
    {
        ProbeHarness harness(loop);
        {
            ProbeRunner runner(loop.get(), [](auto...) { FAIL("no result after destruction"); });
            auto slow =
                exec_probe({"/bin/sh", "-c", "echo $$$$ > \"$1\"; sleep 100", "sh", pid_file});
            runner.run(ProbeRequest{0, 1, core::ProbePurpose::ready, &slow, nullptr, 10s});
            REQUIRE(loop.run_until([&] { return read_pid(pid_file) > 0; }, 5s));
        }
        // The harness's reaper reaps the killed probe as an unknown child.
        CHECK(loop.run_until([&] { return group_gone(read_pid(pid_file)); }, 5s));
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("probe durations read short") {
    CHECK(format_probe_duration(1s) == "1s");
    CHECK(format_probe_duration(200ms) == "200ms");
    CHECK(format_probe_duration(1500ms) == "1.5s");
    CHECK(format_probe_duration(12s) == "12s");
    CHECK(format_probe_duration(std::chrono::minutes(2)) == "2m");
}

}  // namespace pkit::shell::test
