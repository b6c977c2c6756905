#pragma once
// What a run uses, read from its cgroup (SPEC §15) where pkitd runs services in cgroups,
// from its process group's /proc figures where a cgroup file is missing. One function
// for `status` (on the loop) and /metrics (on libuv's pool), so both show the same.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daemon/shell/io/resources.hpp"
#include "proto/status.hpp"

namespace pkit::shell {

// One run's cgroup, as the reader needs it: plain values, copied on the loop.
struct RunCgroupRead {
    std::string dir;  // the service's cgroup directory; empty: no cgroup
    // cpu.stat usage_usec when the run started; nullopt: not read (the /proc figure
    // stands then).
    std::optional<std::uint64_t> cpu_base_usec;
};

// The resources of each run whose process group is `groups[k]` (0: no run). With
// `cgroups` (empty: none; else one a group, same order), a run is its cgroup: its
// processes are those cgroup.procs lists (those that left its process group too), its
// CPU time is cpu.stat usage_usec less the base (what exited processes used counts)
// and its memory memory.current; each falls back to the /proc figure of the process
// group when its file is missing (memory.current without the memory controller).
// With `descendants` (SPEC §20's measure), a run without a cgroup also counts the
// descendants of its main process (the group's leader) that left its group: a daemon
// that called setsid(), as long as its parent lives.
// Only file reads: safe off the loop.
std::vector<proto::Resources> read_run_resources(const std::vector<pid_t>& groups,
                                                 const std::vector<RunCgroupRead>& cgroups,
                                                 bool descendants = false);

// read_run_resources in two steps, for a pass split among threads: each share's
// scan_group_resources (with others when runs_have_cgroups), then, once all are in,
// finish_run_resources adds them up and reads the cgroups. Only file reads: off the loop.
bool runs_have_cgroups(const std::vector<pid_t>& groups, const std::vector<RunCgroupRead>& cgroups);
std::vector<proto::Resources> finish_run_resources(const std::vector<pid_t>& groups,
                                                   const std::vector<RunCgroupRead>& cgroups,
                                                   std::vector<GroupScan> scans,
                                                   bool descendants = false);

}  // namespace pkit::shell
