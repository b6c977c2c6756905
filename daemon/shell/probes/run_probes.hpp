#pragma once
// The owner of the runs' probes (SPEC §6): the core's ProbeActions run by a
// ProbeRunner, an exec probe's own exit claimed before any run's, and a current run's
// probes cancelled when it exits.

#include <sys/types.h>
#include <uv.h>

#include "daemon/core/supervisor.hpp"
#include "daemon/shell/child_exit.hpp"
#include "daemon/shell/probes/probe_runner.hpp"

namespace pkit::shell {

class RunProbes final : public ExitOwner {
public:
    RunProbes(uv_loop_t* loop, const core::Supervisor& supervisor, ProbeRunner::Callback result)
        : m_supervisor(supervisor), m_runner(loop, std::move(result)) {}

    // The core's ProbeAction: one attempt of the run's ready or health probe.
    void run(const core::ProbeAction& action) {
        const config::ServiceSpec& spec = m_supervisor.service(action.service).spec();
        const config::ProbeSpec& probe =
            action.purpose == core::ProbePurpose::ready ? spec.ready->probe : *spec.health;
        m_runner.run(ProbeRequest{action.service, action.run, action.purpose, &probe, &spec,
                                  probe.timeout, &m_supervisor.daemon_spec()});
    }
    // Whether `pid` was an exec probe's (its result goes to the callback). Asked first
    // of every child reaped, before the launches.
    bool claims(pid_t pid, int wait_status) { return m_runner.on_child_exit(pid, wait_status); }
    // A current run's exit: its probes are cancelled (not a replaced run's: they are its
    // successor's). Never claims the exit.
    bool on_child_exit(ChildExit& exit) override {
        if (exit.service && m_supervisor.service(*exit.service).pid() == exit.pid) {
            m_runner.cancel(*exit.service);
        }
        return false;
    }

private:
    const core::Supervisor& m_supervisor;
    ProbeRunner m_runner;
};

}  // namespace pkit::shell
