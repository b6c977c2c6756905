#pragma once
// What each run's processes use (SPEC §5 `resources`, §11 metrics), read from /proc on
// request: one pass over /proc/*/stat for the whole request, however many services it
// covers, and nothing on a timer. A run is its process group (each run starts its own
// session, so the group's id is the run's main PID).
//
// Each /proc/PID/stat is opened, read and closed within the pass: no descriptor is
// kept between passes. A kept one would save the open (about 5 us a process) but pins
// a page of kernel memory (the file's read buffer, charged to pkitd's cgroup) and a
// descriptor that launches may need: 4 KiB a process kept, 8 MiB at 1,000 services
// when both /metrics and `status` with resources kept one for each.

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "proto/status.hpp"

namespace pkit::shell {

// One pass over /proc/*/stat sums each process group's processes; it may be split among
// threads (the /metrics pass at 10,000 services is 150 ms of system calls, most of them
// opening and reading /proc/PID/stat): a share is the processes whose
// pid % count == index. Processes that vanish while being read are skipped.
struct ProcShare {
    unsigned index = 0;
    unsigned count = 1;
};
// What a share found: the sums for each group of `pgids` (same order; a group with no
// live process has processes 0), and, when `with_others`, each process outside them
// (pid, its figures; sorted by pid), where add_group_scans finds the members: processes
// a run's cgroup lists that left its process group.
// With `with_others`, `parents` holds (parent pid, pid) of every process read, groups'
// included, sorted: where descendants() finds the processes a run's main process
// started that left its group.
struct GroupScan {
    std::vector<proto::Resources> sums;
    std::vector<std::pair<pid_t, proto::Resources>> others;
    std::vector<std::pair<pid_t, pid_t>> parents;
};
GroupScan scan_group_resources(const std::vector<pid_t>& pgids, ProcShare share = {},
                               bool with_others = false);
// Every descendant of each of `roots` (pid, position in `roots`; a root of 0 has
// none), from the shares' `parents`: the members add_group_scans adds when they are
// outside every group (those inside are counted already). A process whose parent
// exited was re-parented and is no one's descendant any more.
std::vector<std::pair<pid_t, std::size_t>> descendants(const std::vector<GroupScan>& scans,
                                                       const std::vector<pid_t>& roots);
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
    pid_t ppid = 0;
    pid_t pgid = 0;
    char state = '?';
    unsigned long long utime = 0, stime = 0;  // clock ticks
    long long cutime = 0, cstime = 0;         // clock ticks, reaped children
    long long rss_pages = 0;
};
bool parse_proc_stat(std::string_view line, ProcStat& out);

}  // namespace pkit::shell
