#include "daemon/shell/memory/memory_watch.hpp"

#include <algorithm>
#include <chrono>

#include "daemon/shell/cgroup/resources_pass.hpp"

namespace pkit::shell {

namespace {

std::uint64_t interval_ms(const config::ServiceSpec& spec) {
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(spec.health->memory_interval).count();
    return static_cast<std::uint64_t>(std::max<std::int64_t>(ms, 100));
}

// A run the measurement is for: starting or running, with its main process.
bool measurable(const core::Service& s) {
    return s.spec().health->memory_max && s.pid() != 0 &&
           (s.state() == core::State::starting || s.state() == core::State::running);
}

}  // namespace

std::uint64_t memory_tick_ms(const core::Supervisor& supervisor) {
    std::uint64_t tick = 0;
    for (std::size_t i = 0; i < supervisor.size(); ++i) {
        const config::ServiceSpec& spec = supervisor.service(i).spec();
        if (spec.health->memory_max) {
            tick = tick == 0 ? interval_ms(spec) : std::min(tick, interval_ms(spec));
        }
    }
    return tick;
}

std::vector<std::size_t> due_runs(const core::Supervisor& supervisor, std::uint64_t now_ms,
                                  std::uint64_t tick_ms, std::vector<MemoryClock>& last) {
    last.resize(supervisor.size());
    std::vector<std::size_t> due;
    for (std::size_t i = 0; i < supervisor.size(); ++i) {
        const core::Service& s = supervisor.service(i);
        if (!measurable(s)) {
            continue;
        }
        MemoryClock& clock = last[i];
        if (clock.run != s.run()) {
            clock = {s.run(), now_ms};  // first seen: measured one interval from now
            continue;
        }
        // Within half a tick of its interval: the next tick would be later still.
        if (now_ms + tick_ms / 2 >= clock.at_ms + interval_ms(s.spec())) {
            clock.at_ms = now_ms;
            due.push_back(i);
        }
    }
    return due;
}

MemoryWatch::MemoryWatch(uv_loop_t* loop, const core::Supervisor& supervisor, CgroupsOf cgroups_of,
                         Measured measured)
    : m_loop(loop),
      m_supervisor(supervisor),
      m_cgroups_of(std::move(cgroups_of)),
      m_measured(std::move(measured)),
      m_timer(loop) {}

MemoryWatch::~MemoryWatch() {
    *m_alive = false;
    if (m_pass != nullptr) {
        m_pass->abandon();
    }
}

void MemoryWatch::refresh() {
    const std::uint64_t tick = memory_tick_ms(m_supervisor);
    if (tick == m_tick_ms && (tick == 0 || m_timer.active())) {
        return;
    }
    m_tick_ms = tick;
    if (tick == 0) {
        m_timer.stop();
        return;
    }
    m_timer.start(
        tick, [this] { this->tick(); }, tick);
}

void MemoryWatch::tick() {
    if (m_pass != nullptr) {
        return;  // the last pass is still reading: this tick measures nothing
    }
    std::vector<std::size_t> due = due_runs(m_supervisor, uv_now(m_loop), m_tick_ms, m_last);
    if (due.empty()) {
        return;
    }
    std::vector<pid_t> groups;
    std::vector<std::uint64_t> runs;
    groups.reserve(due.size());
    for (std::size_t i : due) {
        groups.push_back(m_supervisor.service(i).pid());  // a run leads its process group
        runs.push_back(m_supervisor.service(i).run());
    }
    std::vector<RunCgroupRead> cgroups = m_cgroups_of(due);
    std::vector<bool> in_cgroup(due.size(), false);
    for (std::size_t k = 0; k < cgroups.size() && k < due.size(); ++k) {
        in_cgroup[k] = !cgroups[k].dir.empty();
    }
    auto done = [this, alive = m_alive, due, runs, in_cgroup](std::vector<proto::Resources> read,
                                                              std::optional<OwnProcess>) {
        if (!*alive) {
            return;
        }
        m_pass = nullptr;
        std::vector<MemorySample> samples;
        for (std::size_t k = 0; k < due.size() && k < read.size(); ++k) {
            if (read[k].processes == 0 && read[k].rss_bytes == 0) {
                continue;  // gone meanwhile: nothing measured
            }
            samples.push_back(
                {due[k], runs[k], static_cast<std::uint64_t>(read[k].rss_bytes), in_cgroup[k]});
        }
        m_measured(samples);
    };
    m_pass = ResourcesPass::start(m_loop, std::move(groups), std::move(cgroups), false, done, true);
}

}  // namespace pkit::shell
