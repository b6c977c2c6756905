// scan_group_resources and its shares: each group's processes summed, with no
// /proc/PID/stat descriptor kept past the pass; a pass split in shares adds up to one
// pass; processes outside the groups found for members; pkitd's own open descriptors
// counted exactly.

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon/shell/io/resources.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

namespace {

char state_of(pid_t pid) {
    std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(file, line);
    ProcStat stat;
    return parse_proc_stat(line, stat) ? stat.state : '?';
}

// A process group of `size` paused children, killed and reaped by the destructor.
class PausedGroup {
public:
    explicit PausedGroup(int size) {
        for (int k = 0; k < size; ++k) {
            pid_t leader = m_pids.empty() ? 0 : m_pids.front();
            pid_t pid = fork();
            REQUIRE(pid >= 0);
            if (pid == 0) {
                setpgid(0, leader);
                for (;;) {
                    pause();
                }
            }
            setpgid(pid, leader == 0 ? pid : leader);  // both sides: no race
            m_pids.push_back(pid);
        }
    }
    ~PausedGroup() { kill_all(); }
    PausedGroup(const PausedGroup&) = delete;
    PausedGroup& operator=(const PausedGroup&) = delete;

    pid_t pgid() const { return m_pids.front(); }
    // Waits (5 s at most) until every child sleeps in pause(): its figures then hold.
    bool settled() const {
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        for (pid_t pid : m_pids) {
            while (state_of(pid) != 'S') {
                if (std::chrono::steady_clock::now() > deadline) {
                    return false;
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
        }
        return true;
    }
    const std::vector<pid_t>& pids() const { return m_pids; }
    void kill_all() {
        for (pid_t pid : m_pids) {
            kill(pid, SIGKILL);
            int status = 0;
            waitpid(pid, &status, 0);
        }
        m_pids.clear();
    }

private:
    std::vector<pid_t> m_pids;
};

std::size_t open_fds() {
    std::size_t count = 0;
    for ([[maybe_unused]] const auto& entry :
         std::filesystem::directory_iterator("/proc/self/fd")) {
        ++count;
    }
    return count;
}

// One whole pass (a single share), its sums.
std::vector<proto::Resources> whole_pass(const std::vector<pid_t>& pgids) {
    return scan_group_resources(pgids).sums;
}

}  // namespace

TEST_CASE("scan_group_resources: each group's processes summed, no descriptor kept") {
    PausedGroup group(2);
    REQUIRE(group.settled());
    std::size_t before = open_fds();
    std::vector<pid_t> pgids{group.pgid(), 0, 999999999};
    for (int pass = 0; pass < 2; ++pass) {
        std::vector<proto::Resources> used = whole_pass(pgids);
        REQUIRE(used.size() == 3);
        CHECK(used[0].processes == 2);
        CHECK(used[0].rss_bytes > 0);
        CHECK(used[1].processes == 0);
        CHECK(used[2].processes == 0);
        // Every stat file read is closed within the pass: a kept one pins a page of
        // kernel memory and a descriptor a launch may need.
        CHECK(open_fds() == before);
    }
    group.kill_all();
    CHECK(whole_pass(pgids)[0].processes == 0);
}

TEST_CASE("scan_group_resources: a pass split in shares adds up to one pass") {
    PausedGroup group(5);
    REQUIRE(group.settled());
    std::vector<pid_t> pgids{group.pgid(), 0, 999999999};
    std::vector<proto::Resources> whole = whole_pass(pgids);
    REQUIRE(whole[0].processes == 5);
    for (unsigned count : {2U, 3U}) {
        std::vector<GroupScan> scans;
        for (unsigned k = 0; k < count; ++k) {
            scans.push_back(scan_group_resources(pgids, {k, count}));
            // A share reads only its pids.
            int in_share = 0;
            for (pid_t pid : group.pids()) {
                in_share += static_cast<unsigned>(pid) % count == k ? 1 : 0;
            }
            CHECK(scans.back().sums[0].processes == in_share);
            CHECK(scans.back().others.empty());  // not asked for
        }
        std::vector<proto::Resources> added = add_group_scans(std::move(scans));
        REQUIRE(added.size() == 3);
        CHECK(added[0].processes == 5);
        CHECK(added[0].rss_bytes == whole[0].rss_bytes);
        CHECK(added[0].cpu_seconds == doctest::Approx(whole[0].cpu_seconds));
        CHECK(added[1] == proto::Resources{});
        CHECK(added[2] == proto::Resources{});
    }
    // A share out of range, or none, reads nothing.
    CHECK(scan_group_resources(pgids, {2, 2}).sums[0].processes == 0);
    CHECK(scan_group_resources(pgids, {0, 0}).sums[0].processes == 0);
}

TEST_CASE("scan_group_resources: the processes outside the groups, for members by pid") {
    PausedGroup group(1);
    PausedGroup apart(1);  // a process of another group, a member of the first's run
    REQUIRE(group.settled());
    REQUIRE(apart.settled());
    std::vector<pid_t> pgids{group.pgid()};
    GroupScan scan = scan_group_resources(pgids, {}, true);
    CHECK(std::ranges::is_sorted(scan.others, {}, &std::pair<pid_t, proto::Resources>::first));
    auto found =
        std::ranges::find(scan.others, apart.pgid(), &std::pair<pid_t, proto::Resources>::first);
    REQUIRE(found != scan.others.end());
    CHECK(found->second.processes == 1);
    CHECK(std::ranges::find(scan.others, group.pgid(),
                            &std::pair<pid_t, proto::Resources>::first) == scan.others.end());
    std::vector<GroupScan> scans;
    scans.push_back(std::move(scan));
    std::vector<proto::Resources> sums = add_group_scans(std::move(scans), {{apart.pgid(), 0}});
    CHECK(sums[0].processes == 2);
}

TEST_CASE("read_own_process: the open descriptors, counted as a listing counts them") {
    auto own = read_own_process();
    REQUIRE(own);
    std::int64_t listed = count_own_fds_listed();
    CHECK(own->open_fds == listed);
    CHECK(listed == static_cast<std::int64_t>(open_fds()) - 1);  // the iterator's own
    std::vector<int> extra;
    for (int k = 0; k < 100; ++k) {
        extra.push_back(open("/dev/null", O_RDONLY | O_CLOEXEC));
        REQUIRE(extra.back() >= 0);
    }
    auto more = read_own_process();
    REQUIRE(more);
    CHECK(more->open_fds == own->open_fds + 100);
    CHECK(count_own_fds_listed() == listed + 100);
    for (int fd : extra) {
        close(fd);
    }
    CHECK(read_own_process()->open_fds == own->open_fds);
}

}  // namespace pkit::shell::test
