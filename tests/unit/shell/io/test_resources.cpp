// ProcStatCache and read_group_resources: a cached /proc/PID/stat fd is read again
// instead of reopened; a dead process's fd is dropped (never read as its pid's next
// process); entries of processes gone from /proc are closed; the capacity holds, with
// room kept for the wanted groups; the sums are those of an uncached pass, and of a pass
// split in shares; pkitd's own open descriptors are counted exactly.

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
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

}  // namespace

TEST_CASE("ProcStatCache: a cached fd whose process is gone is dropped, not read") {
    ProcStatCache cache;
    PausedGroup group(1);
    pid_t pid = group.pgid();
    std::vector<proto::Resources> used = read_group_resources({pid}, cache);
    REQUIRE(used.size() == 1);
    CHECK(used[0].processes == 1);
    REQUIRE(cache.contains(pid));

    // Second pass: through the cached fd, the same process.
    used = read_group_resources({pid}, cache);
    CHECK(used[0].processes == 1);
    REQUIRE(cache.contains(pid));

    // dropped() counts every process of the pass: on a busy machine other processes exit
    // while a pass reads them, so the counts below are taken around reads of pid alone.
    int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    REQUIRE(proc_fd >= 0);
    char buffer[1024];
    std::uint64_t before = cache.dropped();
    CHECK(cache.read_stat(proc_fd, pid, buffer, sizeof buffer) > 0);
    CHECK(cache.contains(pid));
    CHECK(cache.dropped() == before);  // live: read through its fd, kept

    // The process dies and is reaped; its fd stays cached until read. Read as if /proc
    // still listed the pid (a reused pid): the old fd fails, the entry goes, and the pid
    // is opened afresh (here it is gone, so nothing is read).
    group.kill_all();
    before = cache.dropped();
    CHECK(cache.read_stat(proc_fd, pid, buffer, sizeof buffer) == 0);
    close(proc_fd);
    CHECK_FALSE(cache.contains(pid));
    CHECK(cache.dropped() == before + 1);
}

TEST_CASE("ProcStatCache: entries of processes gone from /proc close at the pass's end") {
    // Room for 3: pid 1 (the first process /proc lists, outside the group: half the
    // room, rounded down) and the group. No other process's fd is cached, so none that
    // exits meanwhile on a busy machine is read dead and counted in dropped().
    ProcStatCache cache(3);
    PausedGroup group(2);
    std::vector<pid_t> pids = group.pids();
    CHECK(read_group_resources({group.pgid()}, cache)[0].processes == 2);
    CHECK(cache.contains(pids[0]));
    CHECK(cache.contains(pids[1]));
    group.kill_all();
    CHECK(read_group_resources({pids[0]}, cache)[0].processes == 0);
    CHECK_FALSE(cache.contains(pids[0]));
    CHECK_FALSE(cache.contains(pids[1]));
    CHECK(cache.dropped() == 0);  // swept, never read
}

TEST_CASE("ProcStatCache: the capacity holds, half of it kept for the wanted groups") {
    // /proc holds at least this test and pid 1 besides the group, so the processes
    // outside it fill their half (1 of 3) and the group the rest.
    ProcStatCache cache(3);
    PausedGroup group(3);
    for (int pass = 0; pass < 2; ++pass) {
        CHECK(read_group_resources({group.pgid()}, cache)[0].processes == 3);
        CHECK(cache.size() == 3);
        int cached = 0;
        for (pid_t pid : group.pids()) {
            cached += cache.contains(pid) ? 1 : 0;
        }
        CHECK(cached >= 2);  // 3 if the pids wrapped below the others
    }
    CHECK(cache.room() == 3);
}

TEST_CASE("read_group_resources: the sums through the cache are an uncached pass's") {
    std::size_t before = open_fds();
    {
        ProcStatCache uncached(0);
        ProcStatCache cache;
        PausedGroup group(2);
        REQUIRE(group.settled());
        std::vector<pid_t> pgids{group.pgid(), 0, 999999999};
        std::vector<proto::Resources> plain = read_group_resources(pgids, uncached);
        CHECK(uncached.size() == 0);
        read_group_resources(pgids, cache);  // fills the cache
        REQUIRE(cache.contains(group.pgid()));
        std::vector<proto::Resources> cached = read_group_resources(pgids, cache);
        REQUIRE(cached.size() == 3);
        CHECK(plain[0].processes == 2);
        CHECK(cached[0].processes == plain[0].processes);
        CHECK(cached[0].cpu_seconds == plain[0].cpu_seconds);
        CHECK(cached[0].rss_bytes == plain[0].rss_bytes);
        CHECK(plain[0].rss_bytes > 0);
        CHECK(cached[1].processes == 0);
        CHECK(cached[2].processes == 0);
        CHECK(cache.size() > 2);  // every process seen, up to half the room
    }
    CHECK(open_fds() == before);  // the destructor closed them all
}

TEST_CASE("scan_group_resources: a pass split in shares adds up to one pass") {
    PausedGroup group(5);
    REQUIRE(group.settled());
    std::vector<pid_t> pgids{group.pgid(), 0, 999999999};
    ProcStatCache whole_cache(0);
    std::vector<proto::Resources> whole = read_group_resources(pgids, whole_cache);
    REQUIRE(whole[0].processes == 5);
    for (unsigned count : {2U, 3U}) {
        std::vector<std::unique_ptr<ProcStatCache>> caches;
        std::vector<GroupScan> scans;
        for (unsigned k = 0; k < count; ++k) {
            caches.push_back(std::make_unique<ProcStatCache>());
            scans.push_back(scan_group_resources(pgids, *caches.back(), {k, count}));
            // A share reads only its pids, and its cache keeps only those.
            int in_share = 0;
            for (pid_t pid : group.pids()) {
                bool mine = static_cast<unsigned>(pid) % count == k;
                in_share += mine ? 1 : 0;
                CHECK(caches.back()->contains(pid) == mine);
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
    ProcStatCache cache;
    CHECK(scan_group_resources(pgids, cache, {2, 2}).sums[0].processes == 0);
    CHECK(scan_group_resources(pgids, cache, {0, 0}).sums[0].processes == 0);
    CHECK(cache.size() == 0);
}

TEST_CASE("scan_group_resources: the processes outside the groups, for members by pid") {
    PausedGroup group(1);
    PausedGroup apart(1);  // a process of another group, a member of the first's run
    REQUIRE(group.settled());
    REQUIRE(apart.settled());
    std::vector<pid_t> pgids{group.pgid()};
    ProcStatCache cache;
    GroupScan scan = scan_group_resources(pgids, cache, {}, true);
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
