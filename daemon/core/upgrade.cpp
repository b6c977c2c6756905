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
    // A roll's client waits for its end, and that connection is closed at the exec:
    // refused rather than carried, as a group's restart is (the state holds no roll).
    for (const Roll& roll : m_rolls) {
        if (!roll.done) {
            std::string busy = "a rolling restart is in progress (";
            busy += std::to_string(roll.next);
            busy += " of ";
            busy += std::to_string(roll.services.size());
            if (roll.next > 0) {
                busy += ": ";
                busy += m_services[roll.services[roll.next - 1]]->name();
            }
            busy += ")";
            return busy;
        }
    }
    for (std::size_t i = 0; i < m_services.size(); ++i) {
        if (!m_retired[i] && m_services[i]->launch_in_flight()) {
            return m_services[i]->name() + " is being launched";
        }
        // The state holds one run a service; a start_first overlap has two.
        if (!m_retired[i] && m_services[i]->draining_pid() != 0) {
            return m_services[i]->name() + " is replacing a run (start_first)";
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
