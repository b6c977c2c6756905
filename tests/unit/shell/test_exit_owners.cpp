// The order a child's exit is offered to its owners (exit_owners.hpp), with the real
// owners the Daemon has: a group-mode run's exit that its cgroup holds goes no further
// (its last lines not drained yet, its notify socket and record kept, the core not told),
// and once the cgroup empties the exit reaches every owner after the hold before the
// core: its last lines drained, its notify socket closed, its record freed, its OOM kill
// noted. A change of the order that breaks any of these fails here.

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "daemon/shell/cgroup/cgroups.hpp"
#include "daemon/shell/exit_owners.hpp"
#include "daemon/shell/launch/run_records.hpp"
#include "daemon/shell/probes/run_probes.hpp"
#include "daemon/shell/runs/run_notify.hpp"
#include "daemon/shell/runs/run_output.hpp"
#include "daemon/shell/runs/run_starts.hpp"
#include "daemon/shell/upgrade/upgrader.hpp"
#include "tests/unit/core/fake.hpp"
#include "tests/unit/shell/cgroup/fake_cgroupfs.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

namespace {

// An UpgradeHost with no upgrade under way: the Upgrader claims no exit.
class NoUpgradeHost final : public upgrade::UpgradeHost {
public:
    explicit NoUpgradeHost(const core::Supervisor& sup) : m_sup(sup) {}
    const core::Supervisor& supervisor() const override { return m_sup; }
    void log(std::string_view, const std::string&) override {}
    std::optional<std::string> busy_for_upgrade() override { return "a test"; }
    std::string upgrade_state(int, std::vector<int>&) override { return {}; }
    std::expected<void, std::string> read_config(BackgroundLoad::Done) override {
        return std::unexpected("a test");
    }
    std::vector<upgrade::ScaledFact> scaled_facts() const override { return {}; }
    void flush_signals() override {}
    void flush_output() override {}

private:
    const core::Supervisor& m_sup;
};

// Slot `slot` of the run records file at `path`, as the next pkitd would read it.
RunRecord record_at(const std::string& path, std::size_t slot) {
    RunRecord record;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    (void)!::pread(fd, &record, sizeof record, static_cast<off_t>(slot * sizeof record));
    ::close(fd);
    return record;
}

}  // namespace

TEST_CASE(
    "a cgroup-held exit goes no further; once emptied it is drained and ended, then the core's") {
    FakeCgroupfs fs("cpu memory pids");
    TempDir dir;
    TestLoop loop;
    std::vector<std::string> lines;
    struct AtCore {
        bool reached = false;
        std::vector<std::string> lines;
        bool notify_open = true;
        bool oom_killed = false;
    } at_core;
    int emptied = 0;
    {
        config::ServiceSpec spec = core::test::spec("web");
        spec.ready.edit().notify = true;
        core::Supervisor sup = core::test::supervisor({spec});
        sup.start(core::test::at(0));
        sup.take_actions();
        const pid_t pid = 4242;
        const int status = 9;  // killed by SIGKILL
        auto log = [](std::string_view, const std::string&) {};

        NoUpgradeHost upgrade_host(sup);
        upgrade::Upgrader upgrader(loop.get(), upgrade_host,
                                   upgrade::ExecArgs{"/usr/sbin/pkitd", "", "", "text", {}});
        RunStarts starts(
            loop.get(), sup,
            RunStarts::Hooks{
                [](std::size_t,
                   std::uint64_t) -> std::expected<std::unique_ptr<PreparedLaunch>, LaunchFailure> {
                    return std::unexpected(LaunchFailure{config::LaunchError::resources, "test"});
                },
                [](std::size_t, pid_t) {},
                [](std::size_t, std::uint64_t, std::expected<Launched, LaunchFailure>) {},
                [](pid_t, int) {},
                [] {},
                [] { return false; },
            });
        RunOutput output(
            loop.get(), sup,
            [&](std::size_t, std::uint64_t, core::Stream, std::string_view text) {
                lines.emplace_back(text);
            },
            [](std::size_t, std::uint64_t) {}, log);
        RunProbes probes(loop.get(), sup,
                         [](std::size_t, std::uint64_t, core::ProbePurpose, bool, std::string) {});
        RunNotify notify(
            loop.get(), sup, dir.path() + "/pkitd.sock",
            [](std::size_t, std::uint64_t, const NotifyMessage&) {}, log);
        RunRecords records;
        REQUIRE(records.open(dir.path() + "/pkitd.sock.runs"));
        std::vector<ExitOwner*> order;
        Cgroups cgroups(
            loop.get(), sup, log, [] { return core::test::at(1); },
            [&](pid_t reaped, int wait_status) {
                // As the Daemon does: the exit offered again, not to be held twice.
                ++emptied;
                ChildExit again{reaped, wait_status, sup.service_of(reaped), &cgroups,
                                decode_wait_status(wait_status)};
                at_core.reached = !offer_exit(order, again);
                at_core.lines = lines;
                at_core.notify_open = notify.holds(0);
                at_core.oom_killed = again.exit.oom_killed;
            });
        cgroups.open_at(fs.open());
        order = exit_order({upgrader, starts, cgroups, output, probes, notify, records});

        // The run as the Daemon starts it: its cgroup, notify socket, record and pipes.
        REQUIRE(cgroups.run_cgroup(0));
        fs.add("web", true);
        fs.write("web/memory.events", "oom_kill 0\n");
        REQUIRE(notify.open(0, 1));
        ChildRecord child = records.for_child(0, SIGTERM, std::chrono::seconds(5));
        child.record.pid = pid;
        REQUIRE(::pwrite(child.fd, &child.record, sizeof child.record, child.offset) ==
                static_cast<ssize_t>(sizeof child.record));
        records.started(0, pid);
        int out[2];
        int err[2];
        REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
        REQUIRE(::pipe2(err, O_CLOEXEC) == 0);
        output.attach(0, 1, out[0], err[0]);
        cgroups.run_started(0);
        sup.on_spawned(0, 1, pid, core::test::at(0.1));
        sup.take_actions();

        // The main process is killed by the OOM killer; one process is left in the cgroup,
        // and the run's last line is in its pipe.
        REQUIRE(::write(out[1], "last words\n", 11) == 11);
        fs.write("web/memory.events", "oom_kill 1\n");
        ChildExit exit{pid, status, sup.service_of(pid), nullptr, decode_wait_status(status)};
        REQUIRE(exit.service == 0);
        CHECK(offer_exit(order, exit));  // claimed: the core does not hear of it
        CHECK(cgroups.holding(0));
        CHECK(lines.empty());    // the pipe stays open to what is left in the cgroup
        CHECK(notify.holds(0));  // the socket is still the run's
        CHECK(record_at(dir.path() + "/pkitd.sock.runs", 0).pid == pid);  // a next pkitd ends it
        CHECK(emptied == 0);

        fs.populated("web", false);
        REQUIRE(loop.run_until([&] { return emptied > 0; }, 5s));
        CHECK(emptied == 1);
        CHECK(at_core.reached);
        CHECK(at_core.lines == std::vector<std::string>{"last words"});  // before the core
        CHECK_FALSE(at_core.notify_open);
        CHECK(at_core.oom_killed);
        CHECK(record_at(dir.path() + "/pkitd.sock.runs", 0).magic == 0);  // freed
        ::close(out[1]);
        ::close(err[1]);
    }
    CHECK(loop.close() == 0);
}

}  // namespace pkit::shell::test
