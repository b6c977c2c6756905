// The Cgroups owner's guard on signals to a run (SPEC §15): while a group-mode run's
// exit is held for its cgroup, its main pid is reaped and may be another process's, so
// neither the core's signals nor a client's (`pkitctl signal`, through RunCommandsAt)
// may reach that pid: they go to what is left in the cgroup. Against a fake cgroupfs
// (plain files), with a real process standing for the one that reused the pid.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "daemon/shell/cgroup/cgroups.hpp"
#include "daemon/shell/runs/run_commands.hpp"
#include "tests/unit/core/fake.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

namespace {

// ROOT/web of a fake cgroupfs, still populated: what a run left behind.
std::unique_ptr<CgroupTree> guard_tree(TempDir& root) {
    root.write("cgroup.controllers", "cpu pids\n");
    root.write("cgroup.subtree_control", "");
    std::filesystem::create_directories(root.path() + "/web");
    root.write("web/cgroup.procs", "");
    root.write("web/cgroup.events", "populated 1\nfrozen 0\n");
    auto tree = CgroupTree::open(root.path(), 0);
    REQUIRE(tree);
    return std::move(*tree);
}

struct Sent {
    pid_t pid;
    int signo;
};

// A child that waits for a signal and writes the first it gets to a pipe: the process
// that got the reaped run's pid. Signals pending at once come lowest number first, so
// a SIGHUP sent before the test's SIGUSR1 would be the one it reports.
struct OtherProcess {
    pid_t pid = -1;
    int report = -1;
};

OtherProcess other_process() {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    sigset_t wanted;
    sigemptyset(&wanted);
    sigaddset(&wanted, SIGHUP);
    sigaddset(&wanted, SIGTERM);
    sigaddset(&wanted, SIGUSR1);
    sigset_t before;
    REQUIRE(::sigprocmask(SIG_BLOCK, &wanted, &before) == 0);  // pending from the start
    pid_t pid = ::fork();
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
    return {pid, fds[0]};
}

// The first signal `other` got, once it is sent SIGUSR1 itself.
int first_signal(const OtherProcess& other) {
    ::kill(other.pid, SIGUSR1);
    unsigned char byte = 0;
    REQUIRE(::read(other.report, &byte, 1) == 1);
    return byte;
}

}  // namespace

TEST_CASE("a client's signal while a run's exit is held for its cgroup never reaches its pid") {
    TempDir root;
    TestLoop loop;
    const OtherProcess reused = other_process();
    {
        core::Supervisor sup = core::test::supervisor({core::test::spec("web")});
        sup.start(core::test::at(0));
        sup.on_spawned(0, 1, reused.pid, core::test::at(0.1));
        sup.take_actions();
        Cgroups cgroups(
            loop.get(), sup, [](std::string_view, const std::string&) {},
            [] { return core::test::at(1); }, [](pid_t, int) {});
        cgroups.open_at(guard_tree(root));
        REQUIRE(cgroups.run_cgroup(0));

        // The run's main process exited; processes it left still fill its cgroup.
        ChildExit exit{reused.pid, 0, 0, true, {}};
        REQUIRE(cgroups.on_child_exit(exit));
        REQUIRE(cgroups.holding(0));
        REQUIRE(sup.service(0).has_process());  // the core has not seen the exit yet

        // `pkitctl signal web HUP` meanwhile: through the same guard as the core's.
        RunCommandsAt commands(sup, cgroups, core::test::at(1.5));
        commands.signal(0, SIGHUP, false);
        CHECK(first_signal(reused) == SIGUSR1);  // not SIGHUP: the pid was never signalled
    }
    wait_for(reused.pid);
    ::close(reused.report);
    loop.close();
}

TEST_CASE("signals go to the run's pid until its exit is held, then to its cgroup only") {
    TempDir root;
    TestLoop loop;
    std::vector<Sent> sent;
    {
        core::Supervisor sup = core::test::supervisor({core::test::spec("web")});
        sup.start(core::test::at(0));
        sup.on_spawned(0, 1, 4242, core::test::at(0.1));
        sup.take_actions();
        Cgroups cgroups(
            loop.get(), sup, [](std::string_view, const std::string&) {},
            [] { return core::test::at(1); }, [](pid_t, int) {},
            [&sent](pid_t pid, int signo, bool, bool) {
                sent.push_back({pid, signo});
            });
        cgroups.open_at(guard_tree(root));
        REQUIRE(cgroups.run_cgroup(0));

        RunCommandsAt before(sup, cgroups, core::test::at(0.5));
        before.signal(0, SIGHUP, false);
        cgroups.send(core::SignalAction{0, 1, 4242, SIGTERM, true, false});
        REQUIRE(sent.size() == 2);
        CHECK(sent[0].pid == 4242);
        CHECK(sent[0].signo == SIGHUP);
        CHECK(sent[1].signo == SIGTERM);

        ChildExit exit{4242, 0, 0, true, {}};
        REQUIRE(cgroups.on_child_exit(exit));
        sent.clear();
        RunCommandsAt held(sup, cgroups, core::test::at(1.5));
        held.signal(0, SIGHUP, false);
        held.signal(0, SIGKILL, true);
        cgroups.send(core::SignalAction{0, 1, 4242, SIGTERM, true, false});
        CHECK(sent.empty());
        CHECK_FALSE(cgroups.clone_into(0));  // the SIGKILL went to the whole cgroup
    }
    loop.close();
}

}  // namespace pkit::shell::test
