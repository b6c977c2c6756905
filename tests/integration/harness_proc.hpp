#pragma once
// Process inspection through /proc, to check what pkitd left behind: zombies, orphans,
// process groups, memory. Everything here reads a snapshot; callers poll with wait_for.

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pkit::itest {

struct ProcInfo {
    pid_t pid = 0;
    pid_t ppid = 0;
    pid_t pgid = 0;
    char state = '?';     // R, S, D, Z, T, ...
    std::string cmdline;  // argv joined with spaces; empty for zombies
};

// One process from /proc/PID/stat and cmdline, or nullopt when it does not exist.
std::optional<ProcInfo> proc_info(pid_t pid);
// Every process visible in /proc.
std::vector<ProcInfo> all_processes();

// The process exists and is not a zombie.
bool pid_alive(pid_t pid);
bool is_zombie(pid_t pid);
// Processes whose parent is `pid`.
std::vector<ProcInfo> children_of(pid_t pid);
// Children, grandchildren, ... of `pid` (not `pid` itself).
std::vector<ProcInfo> descendants_of(pid_t pid);
// The zombies in `procs`.
std::vector<ProcInfo> zombies_among(const std::vector<ProcInfo>& procs);
// The members of process group `pgid`.
std::vector<ProcInfo> group_members(pid_t pgid);
// VmRSS in kB, or nullopt once the process is gone.
std::optional<long> rss_kb(pid_t pid);

// Live (non-zombie) processes whose argv or environment contains `marker`, except
// those in `exclude`. The harness gives pkitd the case's temp dir as the marker in
// PKIT_ITEST_MARKER, so every service and its descendants inherit it.
std::vector<ProcInfo> marker_processes(std::string_view marker,
                                       const std::vector<pid_t>& exclude = {});
// SIGKILLs every marker process: the safety net at the end of a case. Returns how
// many were found.
int kill_marker_processes(std::string_view marker);

// "pid 12 (S, ppid 3): sleep 1000" lines, for failure messages.
std::string describe(const std::vector<ProcInfo>& procs);

}  // namespace pkit::itest
