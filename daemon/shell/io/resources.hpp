#pragma once
// What each run's processes use (SPEC §5 `resources`, §11 metrics), read from /proc on
// request: one pass over /proc/*/stat for the whole request, however many services it
// covers, and nothing on a timer. A run is its process group (each run starts its own
// session, so the group's id is the run's main PID).

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "proto/status.hpp"

namespace pkit::shell {

// Open /proc/PID/stat fds kept from one pass to the next, so that a pass pread()s a
// known process instead of opening and closing its stat file (the kernel's path walk
// is most of a pass's cost). An fd outlives its process harmlessly: reading it then
// fails (ESRCH), so a reused pid is never read through its predecessor's fd; such an
// entry is dropped and the pid's new process opened afresh. Entries whose pid is no
// longer in /proc are closed at the end of each pass. Bounded: at most `capacity` fds,
// and never more than a quarter of the soft RLIMIT_NOFILE nor an fd above half of it,
// so launches and clients keep their descriptors; processes outside the wanted groups
// fill at most half of the room. All fds are O_CLOEXEC and closed by the destructor.
// A capacity of 0 caches nothing (every pass opens every file).
class ProcStatCache {
public:
    static constexpr std::size_t k_default_capacity = 4096;

    explicit ProcStatCache(std::size_t capacity = k_default_capacity);
    ~ProcStatCache();
    ProcStatCache(const ProcStatCache&) = delete;
    ProcStatCache& operator=(const ProcStatCache&) = delete;

    // Reads /proc/PID/stat of `pid` into `buffer`: through its cached fd, else by an
    // open whose fd is then pending until keep(). Returns the bytes read, 0 when the
    // process is gone. `proc_fd` is an fd of /proc.
    std::size_t read_stat(int proc_fd, pid_t pid, char* buffer, std::size_t size);
    // Caches the fd the last read_stat() opened, if any, when there is room (all of it
    // for a process of a `wanted` group, half for any other); else closes it.
    void keep(bool wanted);
    // Ends a pass: closes the entries read_stat() was not called for since the last.
    void end_pass();

    std::size_t size() const { return m_fds.size(); }
    bool contains(pid_t pid) const { return m_fds.contains(pid); }
    // Cached fds found dead (ESRCH) when read, since construction.
    std::uint64_t dropped() const { return m_dropped; }
    // The room: the capacity bounded by the soft RLIMIT_NOFILE (read at each pass's end).
    std::size_t room() const;

private:
    struct Entry {
        int fd;
        std::uint64_t pass;
    };
    void close_entry(int fd);

    std::size_t m_capacity;
    std::size_t m_soft_nofile;
    std::unordered_map<pid_t, Entry> m_fds;
    std::uint64_t m_pass = 1;
    std::uint64_t m_dropped = 0;
    int m_pending_fd = -1;
    pid_t m_pending_pid = 0;
};

// The sums for each process group of `pgids` (same order; a group with no live
// process has processes 0). Processes that vanish while being read are skipped.
// `members` (pid, position) adds processes outside those groups to a position's sums:
// those a run's cgroup lists that left its process group.
std::vector<proto::Resources> read_group_resources(
    const std::vector<pid_t>& pgids, ProcStatCache& cache,
    std::vector<std::pair<pid_t, std::size_t>> members = {});

// The same pass split among threads (the /metrics pass at 10,000 services is 150 ms of
// system calls, most of them opening and reading /proc/PID/stat): a share is the
// processes whose pid % count == index, each read through a ProcStatCache of its share
// alone (a pid falls to the same share from pass to pass, so each cache stays warm).
struct ProcShare {
    unsigned index = 0;
    unsigned count = 1;
};
// What a share found: the sums for each group of `pgids`, and, when `with_others`, each
// process outside them (pid, its figures; sorted by pid), where add_group_scans finds
// the members.
struct GroupScan {
    std::vector<proto::Resources> sums;
    std::vector<std::pair<pid_t, proto::Resources>> others;
};
GroupScan scan_group_resources(const std::vector<pid_t>& pgids, ProcStatCache& cache,
                               ProcShare share = {}, bool with_others = false);
// The shares' sums added up (for each position, the groups' processes in every share),
// with the figures of each of `members` found among their others.
std::vector<proto::Resources> add_group_scans(
    std::vector<GroupScan> scans, std::vector<std::pair<pid_t, std::size_t>> members = {});

// pkitd's own process, for its process_* metrics (the Prometheus client convention).
struct OwnProcess {
    double cpu_seconds = 0;      // user + system, every thread
    std::int64_t rss_bytes = 0;  // resident
    std::int64_t open_fds = 0;
    std::int64_t max_fds = 0;  // the soft RLIMIT_NOFILE
};
// Reads /proc/self/stat and the number of open descriptors (the size of /proc/self/fd
// since Linux 6.2, else its listing, linear in pkitd's open files: read off the loop,
// with the groups' pass); nullopt when /proc cannot be read.
std::optional<OwnProcess> read_own_process();
// The open descriptors counted by listing /proc/self/fd, as before Linux 6.2 (tests).
std::int64_t count_own_fds_listed();

// One /proc/PID/stat line, parsed: the fields the sums need. Pure, for tests.
struct ProcStat {
    pid_t pgid = 0;
    char state = '?';
    unsigned long long utime = 0, stime = 0;  // clock ticks
    long long cutime = 0, cstime = 0;         // clock ticks, reaped children
    long long rss_pages = 0;
};
bool parse_proc_stat(std::string_view line, ProcStat& out);

}  // namespace pkit::shell
