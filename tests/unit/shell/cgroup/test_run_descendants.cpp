// read_run_resources with descendants (SPEC §20's measure without a cgroup): a run also
// counts what its main process started that left its process group (setsid), found
// through the parent of each process; and descendants() on its own.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon/shell/cgroup/run_resources.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

namespace {

// A run's main process (the leader of its own group) whose child called setsid() and
// sleeps: the child's pid is written to the pipe once it is in its session.
class RunWithEscapee {
public:
    RunWithEscapee() {
        int fds[2];
        REQUIRE(pipe(fds) == 0);
        m_main = fork();
        REQUIRE(m_main >= 0);
        if (m_main == 0) {
            setpgid(0, 0);
            pid_t child = fork();
            if (child == 0) {
                setsid();
                pid_t self = getpid();
                (void)!write(fds[1], &self, sizeof self);
                for (;;) {
                    pause();
                }
            }
            for (;;) {
                pause();
            }
        }
        setpgid(m_main, m_main);
        close(fds[1]);
        REQUIRE(read(fds[0], &m_escapee, sizeof m_escapee) == sizeof m_escapee);
        close(fds[0]);
    }
    ~RunWithEscapee() {
        kill(m_escapee, SIGKILL);  // not our child: reaped by its parent or init
        kill(m_main, SIGKILL);
        int status = 0;
        waitpid(m_main, &status, 0);
    }
    RunWithEscapee(const RunWithEscapee&) = delete;
    RunWithEscapee& operator=(const RunWithEscapee&) = delete;

    pid_t main() const { return m_main; }
    pid_t escapee() const { return m_escapee; }

private:
    pid_t m_main = -1;
    pid_t m_escapee = -1;
};

GroupScan scan_of(std::vector<std::pair<pid_t, pid_t>> parents) {
    GroupScan scan;
    scan.parents = std::move(parents);
    std::ranges::sort(scan.parents);
    return scan;
}

}  // namespace

TEST_CASE("read_run_resources with descendants: a child that called setsid counts") {
    RunWithEscapee run;
    REQUIRE(getpgid(run.escapee()) == run.escapee());  // in a group of its own
    const std::vector<pid_t> groups{run.main()};
    // The process group alone: the main process.
    CHECK(read_run_resources(groups, {})[0].processes == 1);
    // With its descendants: the escaped child too, and its memory.
    const auto both = read_run_resources(groups, {}, true);
    CHECK(both[0].processes == 2);
    CHECK(both[0].rss_bytes > read_run_resources(groups, {})[0].rss_bytes);
    // A run given a cgroup directory is measured from its cgroup instead: a directory
    // without the files falls back to the group's figures, and adds no descendant.
    const auto in_cgroup = read_run_resources(groups, {{"/nonexistent-pkit-cgroup", {}}}, true);
    CHECK(in_cgroup[0].processes == 1);
}

TEST_CASE("descendants: every process below each root, through any depth") {
    // 10 -> 11 -> 12, 10 -> 13; 20 -> 21; 30 has none; 1 -> 10 is above the root.
    std::vector<GroupScan> scans;
    scans.push_back(scan_of({{1, 10}, {10, 11}, {20, 21}}));
    scans.push_back(scan_of({{11, 12}, {10, 13}, {1, 20}}));
    auto found = descendants(scans, {10, 0, 20, 30});
    std::ranges::sort(found);
    CHECK(found == std::vector<std::pair<pid_t, std::size_t>>{{11, 0}, {12, 0}, {13, 0}, {21, 2}});
    CHECK(descendants({}, {10}).empty());
}

}  // namespace pkit::shell::test
