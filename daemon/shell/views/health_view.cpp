#include "daemon/shell/views/health_view.hpp"

#include "daemon/core/readiness.hpp"

namespace pkit::shell {

proto::HealthResult health_result(const core::Supervisor& supervisor, core::Now now) {
    core::Readiness readiness = core::readiness(supervisor, now);
    proto::HealthResult result;
    result.live = true;
    result.ready = readiness.ready;
    result.not_ready.reserve(readiness.not_ready.size());
    for (core::NotReady& entry : readiness.not_ready) {
        result.not_ready.push_back(proto::NotReadyInfo{std::move(entry.name),
                                                       std::string(core::to_string(entry.state)),
                                                       std::move(entry.reason)});
    }
    return result;
}

std::vector<pid_t> run_groups(const core::Supervisor& supervisor,
                              const std::vector<std::size_t>& services) {
    std::vector<pid_t> groups;
    groups.reserve(services.size());
    for (std::size_t i : services) {
        const core::Service& s = supervisor.service(i);
        // Every run starts its own session: its process group's id is its main PID.
        groups.push_back(s.has_process() ? s.pid() : 0);
    }
    return groups;
}

}  // namespace pkit::shell
