// What the Supervisor and a Service do around an upgrade in place (SPEC §16); the walk
// of their fields is in persist.hpp.
#include "daemon/core/persist.hpp"

namespace pkit::core {

void Service::resumed(Now now) {
    if (m_pid == 0) {
        return;
    }
    if (m_phase == Phase::starting && !m_ready && m_spec.ready->probe.enabled() &&
        !due(Timer::ready_probe) && due(Timer::ready_timeout)) {
        timer(Timer::ready_probe) = now.mono;
    }
    const config::ProbeSpec& health = *m_spec.health;
    if (m_phase == Phase::running && health.enabled() &&
        health.kind != config::ProbeKind::watchdog && !due(Timer::health_probe)) {
        timer(Timer::health_probe) = now.mono;
    }
}

std::optional<std::string> Supervisor::busy_for_upgrade() const {
    if (m_shutting_down) {
        return "pkitd is shutting down";
    }
    if (!m_reloads.empty()) {
        return "a reload is in progress";
    }
    for (const Group& group : m_groups) {
        if (group.busy()) {
            return "group " + group.spec.name + " is restarting its members";
        }
    }
    for (std::size_t i = 0; i < m_services.size(); ++i) {
        if (!m_retired[i] && m_services[i]->launch_in_flight()) {
            return m_services[i]->name() + " is being launched";
        }
    }
    return std::nullopt;
}

void Supervisor::resumed(Now now) {
    m_runs.clear();
    for (std::size_t i = 0; i < m_services.size(); ++i) {
        if (m_retired[i]) {
            continue;
        }
        Service& service = touch(i);
        service.resumed(now);
        if (service.pid() != 0) {
            m_runs[service.pid()] = {i, service.run()};
        }
    }
    reindex();
    settle(now);
}

}  // namespace pkit::core
