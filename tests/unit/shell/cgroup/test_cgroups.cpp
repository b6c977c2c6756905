// The Cgroups owner (cgroup/cgroups.hpp, SPEC §15) against the fake cgroupfs: a run's
// cgroup made with its [resources] before its launch, a group-mode run's exit held while
// its cgroup has processes (they get the stop signal, the cgroup is killed at the stop
// timeout, the exit goes on once it empties), the OOM kill noted on an exit it lets go,
// the freeze, and every call answered as "none" without cgroups. The signal guard is
// test_cgroups_guard.cpp's.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "daemon/shell/cgroup/cgroups.hpp"
#include "tests/unit/core/fake.hpp"
#include "tests/unit/shell/cgroup/fake_cgroupfs.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

namespace {

using core::test::at;

// A process left in a run's cgroup: it reports the first of SIGTERM and SIGWINCH it
// gets. The test sends SIGWINCH itself once the owner has acted; signals pending
// together come lowest number first, so a SIGTERM sent before is the one reported.
struct LeftBehind {
    pid_t pid = -1;
    int report = -1;

    LeftBehind() {
        int fds[2];
        REQUIRE(::pipe(fds) == 0);
        sigset_t wanted;
        sigemptyset(&wanted);
        sigaddset(&wanted, SIGTERM);
        sigaddset(&wanted, SIGWINCH);
        sigset_t before;
        REQUIRE(::sigprocmask(SIG_BLOCK, &wanted, &before) == 0);
        pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            int signo = 0;
            ::sigwait(&wanted, &signo);
            unsigned char byte = static_cast<unsigned char>(signo);
            (void)!::write(fds[1], &byte, 1);
            ::_exit(0);
        }
        ::sigprocmask(SIG_SETMASK, &before, nullptr);
        ::close(fds[1]);
        report = fds[0];
    }
    ~LeftBehind() {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        ::close(report);
    }
    int first_signal() const {
        ::kill(pid, SIGWINCH);
        unsigned char byte = 0;
        REQUIRE(::read(report, &byte, 1) == 1);
        return byte;
    }
};

struct EmptiedExit {
    pid_t pid;
    int wait_status;
};

// `web` (and `api`) running runs 1 as pids 4242 (and 4343).
core::Supervisor running_services(config::ServiceSpec web, config::DaemonSpec daemon = {}) {
    core::Supervisor sup =
        core::test::supervisor({std::move(web), core::test::spec("api")}, std::move(daemon));
    sup.start(at(0));
    sup.take_actions();
    const std::size_t api = *sup.find("api");
    const std::size_t web_index = *sup.find("web");
    sup.on_spawned(web_index, 1, 4242, at(0.1));
    sup.on_spawned(api, 1, 4343, at(0.1));
    sup.take_actions();
    return sup;
}

}  // namespace

TEST_CASE("a group-mode run's exit is held while its cgroup has processes, then goes on") {
    FakeCgroupfs fs;
    TestLoop loop;
    LeftBehind left;
    std::vector<EmptiedExit> emptied;
    std::vector<std::string> logged;
    {
        core::Supervisor sup = running_services(core::test::spec("web"));
        const std::size_t web = *sup.find("web");
        Cgroups cgroups(
            loop.get(), sup, [&](std::string_view, const std::string& m) { logged.push_back(m); },
            [] { return at(10); },
            [&](pid_t pid, int wait_status) {
                emptied.push_back({pid, wait_status});
            });
        cgroups.open_at(fs.open());
        REQUIRE(cgroups.run_cgroup(web) == fs.path() + "/web");
        fs.add("web", true);  // the kernel's files; the run left a process behind
        fs.write("web/cgroup.procs", std::to_string(left.pid) + "\n");
        CHECK_FALSE(cgroups.holding(web));
        CHECK_FALSE(cgroups.busy());

        ChildExit exit{4242, 3 << 8, web, nullptr, decode_wait_status(3 << 8)};
        CHECK(cgroups.on_child_exit(exit));  // claimed: nobody after it sees the exit
        CHECK(cgroups.holding(web));
        CHECK_FALSE(cgroups.holding(*sup.find("api")));
        CHECK(cgroups.busy().value_or("").find("web") != std::string::npos);
        // What is left got the run's stop signal; the cgroup is killed at the stop timeout.
        CHECK(left.first_signal() == SIGTERM);
        REQUIRE(cgroups.next_deadline());
        CHECK(*core::test::seconds(cgroups.next_deadline()) == doctest::Approx(15));
        CHECK(emptied.empty());

        // The kernel says the cgroup emptied: the exit goes on, as it was reaped.
        fs.populated("web", false);
        REQUIRE(loop.run_until([&] { return !emptied.empty(); }, 5s));
        REQUIRE(emptied.size() == 1);
        CHECK(emptied[0].pid == 4242);
        CHECK(emptied[0].wait_status == 3 << 8);
        CHECK_FALSE(cgroups.holding(web));
        CHECK_FALSE(cgroups.busy());
        CHECK_FALSE(cgroups.next_deadline());
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("a held exit's cgroup is killed at the stop timeout, not before") {
    FakeCgroupfs fs;
    TestLoop loop;
    {
        config::ServiceSpec spec = core::test::spec("web");
        spec.stop.timeout = 2s;
        core::Supervisor sup = running_services(spec);
        const std::size_t web = *sup.find("web");
        Cgroups cgroups(
            loop.get(), sup, [](std::string_view, const std::string&) {}, [] { return at(10); },
            [](pid_t, int) {});
        cgroups.open_at(fs.open());
        REQUIRE(cgroups.run_cgroup(web));
        fs.add("web", true);
        ChildExit exit{4242, 0, web, nullptr, {}};
        REQUIRE(cgroups.on_child_exit(exit));
        CHECK(cgroups.clone_into(web));

        cgroups.on_time(core::test::mono(11.9));
        CHECK(fs.read("web/cgroup.kill").empty());
        cgroups.on_time(core::test::mono(12));
        CHECK(fs.read("web/cgroup.kill") == "1");
        // The next run joins by cgroup.procs: clone3 into a killed cgroup kills it.
        CHECK_FALSE(cgroups.clone_into(web));
        CHECK_FALSE(cgroups.next_deadline());  // killed once, not again
        CHECK(cgroups.holding(web));           // until the kernel says it is empty
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("an exit is let go when its cgroup is empty, its stop mode is process, or it held it") {
    FakeCgroupfs fs("cpu memory pids");
    TestLoop loop;
    {
        config::ServiceSpec spec = core::test::spec("web");
        core::Supervisor sup = running_services(spec);
        const std::size_t web = *sup.find("web");
        const std::size_t api = *sup.find("api");
        Cgroups cgroups(
            loop.get(), sup, [](std::string_view, const std::string&) {}, [] { return at(10); },
            [](pid_t, int) {});
        cgroups.open_at(fs.open());
        REQUIRE(cgroups.run_cgroup(web));
        REQUIRE(cgroups.run_cgroup(api));
        fs.add("web", false);
        fs.add("api", true);

        // Empty: the run has ended with its main process.
        ChildExit empty{4242, 0, web, nullptr, {}};
        CHECK_FALSE(cgroups.on_child_exit(empty));
        CHECK_FALSE(cgroups.holding(web));

        // Delivered again after its hold: not held twice, whatever the cgroup says.
        ChildExit again{4343, 0, api, &cgroups, {}};
        CHECK_FALSE(cgroups.on_child_exit(again));
        CHECK_FALSE(cgroups.holding(api));
        // Offered again by another owner that held it: the cgroup's hold is its own.
        struct OtherHolder final : ExitOwner {
            bool on_child_exit(ChildExit&) override { return false; }
        } other;
        ChildExit other_hold{4343, 0, api, &other, {}};
        CHECK(cgroups.on_child_exit(other_hold));
        CHECK(cgroups.holding(api));

        // No run's exit (an orphan): nothing to hold.
        ChildExit orphan{999, 0, std::nullopt, nullptr, {}};
        CHECK_FALSE(cgroups.on_child_exit(orphan));
    }
    {
        config::ServiceSpec spec = core::test::spec("web");
        spec.stop.mode = config::StopMode::process;
        core::Supervisor sup = running_services(spec);
        const std::size_t web = *sup.find("web");
        Cgroups cgroups(
            loop.get(), sup, [](std::string_view, const std::string&) {}, [] { return at(10); },
            [](pid_t, int) {});
        cgroups.open_at(fs.open());
        REQUIRE(cgroups.run_cgroup(web));
        fs.populated("web", true);
        // stop.mode = "process": the run is its main process alone.
        ChildExit exit{4242, 0, web, nullptr, {}};
        CHECK_FALSE(cgroups.on_child_exit(exit));
        CHECK_FALSE(cgroups.holding(web));
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("an exit let go carries the OOM kill of its run's cgroup, a replaced run's none") {
    FakeCgroupfs fs("cpu memory pids");
    TestLoop loop;
    {
        core::Supervisor sup = running_services(core::test::spec("web"));
        const std::size_t web = *sup.find("web");
        Cgroups cgroups(
            loop.get(), sup, [](std::string_view, const std::string&) {}, [] { return at(10); },
            [](pid_t, int) {});
        cgroups.open_at(fs.open());
        REQUIRE(cgroups.run_cgroup(web));
        fs.add("web", false);
        fs.write("web/memory.events", "oom 1\noom_kill 1\n");
        cgroups.run_started(web);

        ChildExit quiet{4242, SIGKILL, web, nullptr, decode_wait_status(SIGKILL)};
        CHECK_FALSE(cgroups.on_child_exit(quiet));
        CHECK_FALSE(quiet.exit.oom_killed);  // no kill since the run started

        fs.write("web/memory.events", "oom 2\noom_kill 2\n");
        // A run a start_first restart replaced shares the cgroup with its successor:
        // not its kill to claim.
        ChildExit replaced{777, SIGKILL, web, nullptr, decode_wait_status(SIGKILL)};
        CHECK_FALSE(cgroups.on_child_exit(replaced));
        CHECK_FALSE(replaced.exit.oom_killed);

        ChildExit killed{4242, SIGKILL, web, nullptr, decode_wait_status(SIGKILL)};
        CHECK_FALSE(cgroups.on_child_exit(killed));
        CHECK(killed.exit.oom_killed);
        CHECK(killed.exit.signal == SIGKILL);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("a run's cgroup gets its [resources] before its launch, again when they change") {
    FakeCgroupfs fs("cpu memory");
    TestLoop loop;
    std::vector<std::string> warnings;
    {
        config::ServiceSpec spec = core::test::spec("web");
        spec.resources.edit().memory_max = 64ULL << 20;
        spec.resources.edit().pids_max = 10;  // no pids controller here
        core::Supervisor sup = running_services(spec);
        const std::size_t web = *sup.find("web");
        Cgroups cgroups(
            loop.get(), sup,
            [&](std::string_view level, const std::string& m) {
                if (level == "warning") {
                    warnings.push_back(m);
                }
            },
            [] { return at(10); }, [](pid_t, int) {});
        CHECK_FALSE(cgroups.limits_report(web));
        auto tree = fs.open();
        fs.add("web", false);  // made by the kernel's files before pkitd's mkdir
        cgroups.open_at(std::move(tree));
        REQUIRE(cgroups.run_cgroup(web) == fs.path() + "/web");
        CHECK(fs.read("web/memory.max") == "67108864");
        auto report = cgroups.limits_report(web);
        REQUIRE(report);
        CHECK(report->applied == std::vector<std::string>{"memory_max"});
        REQUIRE(report->not_applied.size() == 1);
        CHECK(report->not_applied[0].key == "pids_max");
        REQUIRE(warnings.size() == 1);
        CHECK(warnings[0].starts_with("web: [resources] not applied: pids_max"));

        // The same limits again: nothing written, nothing warned.
        fs.write("web/memory.max", "");
        REQUIRE(cgroups.run_cgroup(web));
        CHECK(fs.read("web/memory.max").empty());
        CHECK(warnings.size() == 1);

        // The slot went to another service: made and limited afresh at its launch.
        cgroups.slot_reused(web);
        CHECK_FALSE(cgroups.limits_report(web));
        REQUIRE(cgroups.run_cgroup(web));
        CHECK(fs.read("web/memory.max") == "67108864");
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("pause and resume write cgroup.freeze") {
    FakeCgroupfs fs;
    TestLoop loop;
    {
        core::Supervisor sup = running_services(core::test::spec("web"));
        const std::size_t web = *sup.find("web");
        Cgroups cgroups(
            loop.get(), sup, [](std::string_view, const std::string&) {}, [] { return at(10); },
            [](pid_t, int) {});
        cgroups.open_at(fs.open());
        REQUIRE(cgroups.run_cgroup(web));
        fs.add("web", true);
        cgroups.freeze(core::FreezeAction{web, 1, true});
        CHECK(fs.read("web/cgroup.freeze") == "1");
        cgroups.freeze(core::FreezeAction{web, 1, false});
        CHECK(fs.read("web/cgroup.freeze") == "0");
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("without cgroups a run has no cgroup, no exit is held, a signal goes to the pid") {
    TestLoop loop;
    std::vector<std::string> logged;
    std::vector<std::pair<pid_t, int>> sent;
    {
        config::ServiceSpec spec = core::test::spec("web");
        spec.resources.edit().memory_max = 64ULL << 20;
        config::DaemonSpec daemon;
        daemon.cgroups = config::CgroupMode::off;
        core::Supervisor sup = running_services(spec, daemon);
        const std::size_t web = *sup.find("web");
        Cgroups cgroups(
            loop.get(), sup, [&](std::string_view, const std::string& m) { logged.push_back(m); },
            [] { return at(10); }, [](pid_t, int) {},
            [&](pid_t pid, int signo, bool, bool) { sent.emplace_back(pid, signo); });
        REQUIRE(cgroups.open("/proc/self", false));
        CHECK_FALSE(cgroups.enabled());
        CHECK_FALSE(cgroups.info().enabled);
        CHECK(cgroups.run_cgroup(web) == std::string());
        CHECK(cgroups.clone_into(web));
        auto report = cgroups.limits_report(web);
        REQUIRE(report);
        CHECK(report->applied.empty());
        REQUIRE(report->not_applied.size() == 1);
        CHECK(report->not_applied[0].reason.starts_with("cgroups not used"));

        ChildExit exit{4242, 0, web, nullptr, {}};
        CHECK_FALSE(cgroups.on_child_exit(exit));
        CHECK_FALSE(cgroups.holding(web));
        CHECK_FALSE(exit.exit.oom_killed);
        cgroups.send(core::SignalAction{web, 1, 4242, SIGTERM, true, false});
        cgroups.signal_client(web, 4242, SIGHUP, false);
        CHECK(sent == std::vector<std::pair<pid_t, int>>{{4242, SIGTERM}, {4242, SIGHUP}});
        logged.clear();
        cgroups.freeze(core::FreezeAction{web, 1, true});
        REQUIRE(logged.size() == 1);
        CHECK(logged[0] == "web: cannot pause: pkitd uses no cgroups");
        CHECK(cgroups.reads({web}).empty());
        CHECK_FALSE(cgroups.busy());
    }
    CHECK(loop.close() == 0);
}

}  // namespace pkit::shell::test
