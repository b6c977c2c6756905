#pragma once
// One read of many runs' resources (read_run_resources) off the loop, for /metrics and
// `status --resources` alike: at 10,000 services a pass is 150 ms of system calls
// (opening and reading each /proc/PID/stat), which no turn of the loop may hold. The
// pass is split among up to k_pass_threads of libuv's pool threads, each reading a share
// of the pids (ProcShare); the item that ends the last share adds the shares up and
// reads the cgroups. The result reaches the loop in the after-work callback of the last
// item.

#include <uv.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "daemon/shell/cgroup/run_resources.hpp"
#include "daemon/shell/io/resources.hpp"

namespace pkit::shell {

class ResourcesPass {
public:
    // At most this many pool threads read a pass (fewer when fewer CPUs are available),
    // leaving the rest of the pool to reloads and probes.
    static constexpr unsigned k_pass_threads = 2;

    // The resources of each of `groups` (same order; empty when nothing could be read,
    // out of memory), and pkitd's own process when asked for.
    using Done = std::function<void(std::vector<proto::Resources>, std::optional<OwnProcess>)>;

    // Queues a pass over `groups` (and `cgroups` and `descendants`, see
    // read_run_resources); `done` is called on the loop on a later turn. Null when the
    // pool took no work: `done` is then never called.
    static ResourcesPass* start(uv_loop_t* loop, std::vector<pid_t> groups,
                                std::vector<RunCgroupRead> cgroups, bool read_own, Done done,
                                bool descendants = false);

    // For an owner that goes away first: `done` is never called, and what has not
    // started is cancelled. The pass frees itself once libuv hands back its items.
    void abandon();

    ResourcesPass(const ResourcesPass&) = delete;
    ResourcesPass& operator=(const ResourcesPass&) = delete;

private:
    struct Work;
    friend struct std::default_delete<ResourcesPass>;  // it frees itself
    ResourcesPass() = default;
    ~ResourcesPass();
    void scan_shares();
    void finish();
    void work_done();

    std::vector<pid_t> m_groups;
    std::vector<RunCgroupRead> m_cgroups;
    bool m_read_own = false;
    bool m_descendants = false;
    Done m_done;
    std::vector<GroupScan> m_scans;              // one a share
    std::vector<std::unique_ptr<Work>> m_works;  // one a share; those queued
    unsigned m_share_count = 0;                  // set before any item is queued
    std::atomic<unsigned> m_next_share{0};
    std::atomic<unsigned> m_shares_left{0};
    unsigned m_works_left = 0;  // queued items whose after-work has not run (loop thread)
    std::vector<proto::Resources> m_resources;
    std::optional<OwnProcess> m_own;
};

}  // namespace pkit::shell
