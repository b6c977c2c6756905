// A pkitd killed hard leaves its runs running (re-parented, their pipes' reader gone).
// Started again on the same configuration and socket, pkitd ends them before it starts
// its own (SOCKET.runs, pkitd(8) "After pkitd itself was killed"): never two copies of
// a service, and nothing of the old runs' process groups left.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>

#include "daemon/shell/launch/run_records.hpp"
#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

constexpr int k_killed_services = 20;

std::string killed_service_name(int i) {
    return "s" + std::to_string(i);
}

// Every service runs a main process (`sleep 1001`) and a child of its process group
// (`sleep 1000`); both carry the case's marker in their environment.
struct ServiceProcesses {
    int mains = 0;
    int children = 0;
    std::vector<ProcInfo> procs;
};

ServiceProcesses count_killed_services(const TempDir& dir, const std::vector<pid_t>& pkitds) {
    ServiceProcesses counts;
    counts.procs = marker_processes(dir.str(), pkitds);
    for (const ProcInfo& p : counts.procs) {
        counts.mains += p.cmdline == "sleep 1001" ? 1 : 0;
        counts.children += p.cmdline == "sleep 1000" ? 1 : 0;
    }
    return counts;
}

void wait_killed_services_running(Daemon& pkitd) {
    Client client = pkitd.client();
    for (int i = 0; i < k_killed_services; ++i) {
        wait_status(client, killed_service_name(i), state_is("running"), 20s,
                    killed_service_name(i) + " runs");
    }
}

}  // namespace

TEST_CASE(
    "after SIGKILL of pkitd, the next pkitd on the same configuration runs each service "
    "once") {
    TempDir dir;
    for (int i = 0; i < k_killed_services; ++i) {
        dir.service(killed_service_name(i),
                    sh_command("sleep 1000 & exec sleep 1001") + "[stop]\ntimeout = \"2s\"\n");
    }
    Daemon first(dir);
    first.wait_ready();
    wait_killed_services_running(first);
    wait_for([&] { return count_killed_services(dir, {first.pid()}).mains == k_killed_services; },
             10s, "every main process exec'd",
             [&] { return describe(count_killed_services(dir, {}).procs); });

    first.signal(SIGKILL);
    REQUIRE(first.wait_exit(10s) == 128 + SIGKILL);
    // The runs outlived it: that is what the next pkitd must deal with.
    ServiceProcesses orphaned = count_killed_services(dir, {});
    CHECK_MESSAGE(orphaned.mains == k_killed_services, describe(orphaned.procs));
    CHECK_MESSAGE(orphaned.children == k_killed_services, describe(orphaned.procs));

    Daemon second(dir);
    second.wait_ready();
    wait_killed_services_running(second);
    // The old runs got their stop signal before any new run started, and SIGKILL before
    // the first run started; they may take a moment more to be gone from /proc.
    wait_for(
        [&] {
            ServiceProcesses now = count_killed_services(dir, {second.pid()});
            return now.mains == k_killed_services && now.children == k_killed_services &&
                   now.procs.size() == 2 * k_killed_services;
        },
        5s, "exactly one main process and one child per service",
        [&] { return describe(count_killed_services(dir, {second.pid()}).procs); });
    // And they are the new pkitd's: each main is its child, each child in a main's group.
    ServiceProcesses now = count_killed_services(dir, {second.pid()});
    std::vector<pid_t> mains;
    for (const ProcInfo& p : now.procs) {
        if (p.cmdline == "sleep 1001") {
            CHECK_MESSAGE(p.ppid == second.pid(), describe({p}));
            mains.push_back(p.pid);
        }
    }
    for (const ProcInfo& p : now.procs) {
        if (p.cmdline == "sleep 1000") {
            CHECK_MESSAGE(std::ranges::find(mains, p.pgid) != mains.end(), describe({p}));
        }
    }
    CHECK_MESSAGE(second.log().find("ended " + std::to_string(k_killed_services) +
                                    " runs a previous pkitd left running") != std::string::npos,
                  second.log());
    CHECK(second.stop() == 0);
    CHECK_MESSAGE(count_killed_services(dir, {}).procs.empty(),
                  describe(count_killed_services(dir, {}).procs));
    // An orderly exit leaves no records behind.
    CHECK_FALSE(fs::exists(second.socket() + ".runs"));
}

TEST_CASE("a recorded pid that now names another process is left alone") {
    TempDir dir;
    dir.service("a", runner_toml());
    // A session leader of this test's, recorded as a run that started a minute after
    // it did: the pid is the same, the process is not (pid reuse, as the next pkitd
    // would see it).
    pid_t other = ::fork();
    REQUIRE(other >= 0);
    if (other == 0) {
        ::setsid();
        ::execl("/bin/sleep", "sleep", "1000", static_cast<char*>(nullptr));
        ::_exit(127);
    }
    timespec now{};
    ::clock_gettime(CLOCK_BOOTTIME, &now);
    pkit::shell::RunRecord stale;
    stale.magic = pkit::shell::k_run_record_magic;
    stale.pid = other;
    stale.after_ns = (static_cast<std::int64_t>(now.tv_sec) + 60) * 1'000'000'000;
    stale.before_ns = stale.after_ns + 1'000'000'000;
    stale.stop_signal = SIGKILL;
    // After a free slot, as a pkitd with two services would leave it.
    std::string records(sizeof stale, '\0');
    records.append(reinterpret_cast<const char*>(&stale), sizeof stale);
    write_file(dir.path() / "pkitd.sock.runs", records);
    {
        Daemon pkitd(dir);
        pkitd.wait_ready();
        Client client = pkitd.client();
        wait_running(client, "a");
        CHECK(pid_alive(other));
        CHECK(pkitd.log().find("runs a previous pkitd left running") == std::string::npos);
        CHECK(pkitd.stop() == 0);
    }
    ::kill(other, SIGKILL);
    int status = 0;
    ::waitpid(other, &status, 0);
}

TEST_CASE("a second pkitd whose socket path was taken over finds the records locked") {
    TempDir dir;
    dir.service("a", runner_toml());
    Daemon first(dir);
    first.wait_ready();
    // The first pkitd's socket file is gone (removed by hand), so the second binds its
    // own at the same path; the records still say a live pkitd owns this configuration.
    fs::remove(first.socket());
    Daemon second(dir);
    REQUIRE(second.wait_exit(10s) == 3);
    CHECK_MESSAGE(
        second.log().find("another pkitd holds " + first.socket() + ".runs") != std::string::npos,
        second.log());
    first.signal(SIGTERM);
    CHECK(first.wait_exit(15s) == 0);
}
