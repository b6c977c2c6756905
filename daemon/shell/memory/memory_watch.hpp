#pragma once
// SPEC §20 [health] memory_max: the measurement, a room of its own. One timer at the
// smallest memory_interval of the services that set memory_max (none: no timer); at
// each tick the runs whose interval has passed are measured in one ResourcesPass, off
// the loop (their cgroup's memory.current where they have one, else the RSS of their
// process group and of the descendants of their main process that left it, from
// /proc), and the samples handed to the owner, who gives them to
// the core (Supervisor::on_memory), where two in a row over the limit stop the run.
// At most one pass in flight: a tick that finds one still running measures nothing.

#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "daemon/core/supervisor.hpp"
#include "daemon/shell/cgroup/run_resources.hpp"
#include "daemon/shell/uv_handle.hpp"

namespace pkit::shell {

class ResourcesPass;

// One measurement: `bytes` of `service`'s run `run`, from its cgroup or its RSS.
struct MemorySample {
    std::size_t service = 0;
    std::uint64_t run = 0;
    std::uint64_t bytes = 0;
    bool cgroup = false;
};

// Which runs are due at `now_ms` (the loop's clock), and when each was last measured:
// pure, for the tests. A run is first measured one interval after it was first seen;
// `last` holds per service the run and the time of its latest measurement (or first
// sight), and is updated for those returned.
struct MemoryClock {
    std::uint64_t run = 0;
    std::uint64_t at_ms = 0;
};
std::vector<std::size_t> due_runs(const core::Supervisor& supervisor, std::uint64_t now_ms,
                                  std::uint64_t tick_ms, std::vector<MemoryClock>& last);

// The smallest memory_interval among the services that set memory_max, in ms (at least
// 100); 0 when none does.
std::uint64_t memory_tick_ms(const core::Supervisor& supervisor);

class MemoryWatch {
public:
    // The cgroups of these services' runs (RunCgroupRead, one each; empty: no cgroups).
    using CgroupsOf = std::function<std::vector<RunCgroupRead>(const std::vector<std::size_t>&)>;
    using Measured = std::function<void(const std::vector<MemorySample>&)>;

    // Reads `supervisor` on the loop only; calls `measured` on the loop.
    MemoryWatch(uv_loop_t* loop, const core::Supervisor& supervisor, CgroupsOf cgroups_of,
                Measured measured);
    ~MemoryWatch();
    MemoryWatch(const MemoryWatch&) = delete;
    MemoryWatch& operator=(const MemoryWatch&) = delete;

    // After a load, a reload or a scale: the intervals again; arms or stops the timer.
    void refresh();

private:
    void tick();

    uv_loop_t* m_loop;
    const core::Supervisor& m_supervisor;
    CgroupsOf m_cgroups_of;
    Measured m_measured;
    Timer m_timer;
    std::uint64_t m_tick_ms = 0;
    std::vector<MemoryClock> m_last;
    ResourcesPass* m_pass = nullptr;
    std::shared_ptr<bool> m_alive = std::make_shared<bool>(true);
};

}  // namespace pkit::shell
