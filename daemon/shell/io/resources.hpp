#pragma once
// What each run's processes use (SPEC §5 `resources`, §11 metrics), read from /proc on
// request: one pass over /proc/*/stat for the whole request, however many services it
// covers, and nothing on a timer. A run is its process group (each run starts its own
// session, so the group's id is the run's main PID).

#include <sys/types.h>

#include <string_view>
#include <vector>

#include "proto/status.hpp"

namespace pkit::shell {

// The sums for each process group of `pgids` (same order; a group with no live
// process has processes 0). Processes that vanish while being read are skipped.
std::vector<proto::Resources> read_group_resources(const std::vector<pid_t>& pgids);

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
