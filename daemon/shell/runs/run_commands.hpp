#pragma once
// A client's command on runs (DaemonPort::command, SPEC §9): the core's inputs for a
// service at one moment, and signals through the Cgroups owner's guard, so that
// `pkitctl signal` reaches a run the way the core's own signals do. The Daemon makes
// one per command, once every launch in flight is resolved; it lives for the command.

#include <cstddef>
#include <vector>

#include "daemon/core/supervisor.hpp"
#include "daemon/shell/cgroup/cgroups.hpp"
#include "daemon/shell/control/daemon_port.hpp"

namespace pkit::shell {

class RunCommandsAt final : public DaemonPort::RunCommands {
public:
    RunCommandsAt(core::Supervisor& supervisor, Cgroups& cgroups, core::Now now)
        : m_supervisor(supervisor), m_cgroups(cgroups), m_now(now) {}

    const core::Supervisor& supervisor() const override { return m_supervisor; }
    void start(std::size_t service) override { m_supervisor.start_service(service, m_now); }
    void stop(std::size_t service) override { m_supervisor.stop_service(service, m_now); }
    void restart(std::size_t service) override { m_supervisor.restart_service(service, m_now); }
    std::size_t restart_rolling(std::vector<std::size_t> services) override {
        return m_supervisor.restart_rolling(std::move(services), m_now);
    }
    void pause(std::size_t service) override { m_supervisor.pause_service(service, m_now); }
    void resume(std::size_t service) override { m_supervisor.resume_service(service, m_now); }
    void signal(std::size_t service, int signo, bool group) override {
        const core::Service& s = m_supervisor.service(service);
        if (s.has_process()) {
            m_cgroups.signal_client(service, s.pid(), signo, group);
        }
    }

private:
    core::Supervisor& m_supervisor;
    Cgroups& m_cgroups;
    core::Now m_now;
};

}  // namespace pkit::shell
