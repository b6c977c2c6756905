// `exit_when = "all_done"` (SPEC §12): whether pkitd, as a job container, is finished.

#include "daemon/core/supervisor.hpp"

namespace pkit::core {

std::optional<int> Supervisor::all_done_status() const {
    if (m_shutting_down || !m_reloads.empty()) {
        return std::nullopt;
    }
    // Start order puts each dependency before its dependents, so one pass finds every
    // waiting service that is stuck: behind a dependency failed, stopped or stuck.
    std::vector<bool> stuck(m_services.size(), false);
    int status = 0;
    for (std::size_t i : m_order) {
        const Service& s = *m_services[i];
        switch (s.state()) {
            case State::starting:
            case State::running:
            case State::stopping:
            case State::backoff:
            case State::storm_pause:
            case State::scheduled:
            case State::paused:  // its run lives on, frozen
                return std::nullopt;
            case State::failed:
                status = 1;
                break;
            case State::stopped:
            case State::done:
                break;
            case State::waiting: {
                for (std::size_t d : m_dependencies[i]) {
                    const State dep = m_services[d]->state();
                    if (!m_services[d]->satisfies_dependents() &&
                        (dep == State::failed || dep == State::stopped || stuck[d])) {
                        stuck[i] = true;
                    }
                }
                if (!stuck[i]) {
                    return std::nullopt;  // about to start
                }
                status = 1;
                break;
            }
        }
    }
    return status;
}

}  // namespace pkit::core
