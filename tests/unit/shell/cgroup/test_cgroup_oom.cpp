// OOM kills and a run's resources against a fake cgroupfs: memory.events and the other
// files are plain files the test writes, as the kernel would update them. This machine's
// cgroup v2 hierarchy has no memory controller, so the OOM path is tested here and in
// the core's tests, not with a real OOM kill (test_cgroups.cpp has the rest for real).

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "daemon/shell/cgroup/run_cgroups.hpp"
#include "daemon/shell/cgroup/run_resources.hpp"
#include "tests/unit/shell/cgroup/fake_cgroupfs.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

namespace {

// ROOT with the memory controller and ROOT/web's files.
std::unique_ptr<CgroupTree> fake_memory_tree(FakeCgroupfs& root) {
    root.add("web", false);
    return root.open();
}

std::string memory_events(int oom_kills) {
    return "low 0\nhigh 0\nmax 12\noom 3\noom_kill " + std::to_string(oom_kills) +
           "\noom_group_kill 0\n";
}

}  // namespace

TEST_CASE("oom_kill is read from memory.events, nullopt without the memory controller") {
    FakeCgroupfs root("cpu memory pids");
    auto tree = fake_memory_tree(root);
    CHECK_FALSE(tree->oom_kills("web").has_value());  // no memory.events
    root.write("web/memory.events", memory_events(2));
    CHECK(tree->oom_kills("web") == 2U);
    CHECK(cgroup_oom_kills(root.path() + "/web") == 2U);
    root.write("web/memory.events", "oom_group_kill 4\n");
    CHECK_FALSE(tree->oom_kills("web").has_value());  // another key is not oom_kill
}

TEST_CASE("a run was OOM-killed when oom_kill grew between its start and its end") {
    FakeCgroupfs root("cpu memory pids");
    auto tree = fake_memory_tree(root);
    TestLoop loop;
    {
        RunCgroups runs(loop.get(), *tree, [](std::size_t, pid_t, int) {});
        REQUIRE(runs.prepare(0, "web"));
        root.write("web/memory.events", memory_events(5));  // an earlier run's kills
        runs.run_started(0, "web");
        CHECK_FALSE(runs.oom_killed_since_start(0, "web"));
        root.write("web/memory.events", memory_events(6));  // the kernel killed one
        CHECK(runs.oom_killed_since_start(0, "web"));
        // The next run counts from its own start.
        runs.run_started(0, "web");
        CHECK_FALSE(runs.oom_killed_since_start(0, "web"));
        // A service with no run started, or no reading at the start, never was.
        CHECK_FALSE(runs.oom_killed_since_start(1, "api"));
        std::filesystem::remove(root.path() + "/web/memory.events");
        runs.run_started(0, "web");
        root.write("web/memory.events", memory_events(9));
        CHECK_FALSE(runs.oom_killed_since_start(0, "web"));
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("a run's resources come from its cgroup, the process group's where a file is missing") {
    FakeCgroupfs root("cpu memory pids");
    auto tree = fake_memory_tree(root);
    // A run's main process in a group of its own, and one that left that group.
    pid_t leader = ::fork();
    REQUIRE(leader >= 0);
    if (leader == 0) {
        ::pause();
        ::_exit(0);
    }
    ::setpgid(leader, leader);
    pid_t escaped = ::fork();
    REQUIRE(escaped >= 0);
    if (escaped == 0) {
        ::setsid();
        ::pause();
        ::_exit(0);
    }
    root.write("web/cgroup.procs", std::to_string(escaped) + "\n");
    root.write("web/cpu.stat", "usage_usec 3500000\nuser_usec 3000000\nsystem_usec 500000\n");
    root.write("web/memory.current", "12345\n");
    const std::vector<pid_t> groups{leader};
    const std::vector<RunCgroupRead> cgroups{{root.path() + "/web", 1'000'000}};

    auto plain = read_run_resources(groups, {});
    auto from_cgroup = read_run_resources(groups, cgroups);
    REQUIRE(plain.size() == 1);
    REQUIRE(from_cgroup.size() == 1);
    // The process that left the group counts; CPU and memory are the cgroup's.
    CHECK(plain[0].processes == 1);
    CHECK(from_cgroup[0].processes == 2);
    CHECK(from_cgroup[0].cpu_seconds == doctest::Approx(2.5));
    CHECK(from_cgroup[0].rss_bytes == 12345);

    // The pass split in shares (the /metrics pass on two pool threads) adds up to the
    // same: the member is found in whichever share its pid falls to.
    for (unsigned count : {2U, 3U}) {
        std::vector<GroupScan> scans;
        for (unsigned k = 0; k < count; ++k) {
            scans.push_back(
                scan_group_resources(groups, {k, count}, runs_have_cgroups(groups, cgroups)));
        }
        auto shared = finish_run_resources(groups, cgroups, std::move(scans));
        REQUIRE(shared.size() == 1);
        CHECK(shared[0] == from_cgroup[0]);
    }

    // Without memory.current (no memory controller) the /proc sum stands; without a
    // base for the CPU time, too.
    std::filesystem::remove(root.path() + "/web/memory.current");
    auto fallback = read_run_resources(groups, {{root.path() + "/web", std::nullopt}});
    CHECK(fallback[0].rss_bytes > 0);
    CHECK(fallback[0].rss_bytes != 12345);
    CHECK(fallback[0].cpu_seconds < 2.5);  // two processes that only paused
    // No run: nothing read.
    CHECK(read_run_resources({0}, cgroups)[0] == proto::Resources{});

    for (pid_t pid : {leader, escaped}) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
    }
}

}  // namespace pkit::shell::test
