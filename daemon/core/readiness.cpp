#include "daemon/core/readiness.hpp"

#include <algorithm>

#include "daemon/core/explain.hpp"

namespace pkit::core {

namespace {

std::string joined(const std::vector<std::string>& names) {
    std::string text;
    for (const std::string& name : names) {
        text += (text.empty() ? "" : ", ") + name;
    }
    return text;
}

}  // namespace

std::optional<std::string> not_ready_reason(const Supervisor& supervisor, std::size_t index,
                                            Now now) {
    const Service& s = supervisor.service(index);
    if (!s.spec().affects_readiness) {
        return std::nullopt;
    }
    if (s.schedule().armed) {
        // A scheduled job (affects_readiness written in its file): ready unless its
        // latest episode failed, whatever the current one is doing (SPEC §12).
        if (s.schedule().last_result == State::failed) {
            return "failed: the latest episode failed (" + stopped_words(s) + ")";
        }
        return std::nullopt;
    }
    switch (s.state()) {
        case State::running:
            if (!s.ready()) {
                return "starting: run " + std::to_string(s.run()) + " not ready yet";
            }
            if (s.health() == HealthStatus::unhealthy) {
                return "unhealthy: " + std::to_string(s.health_failures()) +
                       (s.health_failures() == 1 ? " failed probe" : " failed probes");
            }
            return std::nullopt;
        case State::done:
        case State::scheduled:  // disarmed jobs are never here: see above
        case State::stopped:    // not supervised: the operator stopped it, or autostart = false
            return std::nullopt;
        case State::waiting: {
            auto deps = supervisor.unsatisfied_dependencies(index);
            return deps.empty() ? std::string("waiting: about to start")
                                : "waiting: for " + joined(deps);
        }
        case State::starting:
            return "starting: run " + std::to_string(s.run()) + " not ready yet";
        case State::stopping:
            return "stopping: run " + std::to_string(s.run());
        case State::backoff:
            return "backoff: " + restart_words(s, now);
        case State::storm_pause:
            return "storm_pause: " + restart_words(s, now);
        case State::failed:
            return "failed: " + stopped_words(s);
        case State::paused:  // frozen: it answers nobody until resumed
            return paused_words(s, now);
    }
    return std::nullopt;
}

Readiness readiness(const Supervisor& supervisor, Now now) {
    Readiness result;
    for (std::size_t index : supervisor.start_order()) {
        if (auto reason = not_ready_reason(supervisor, index, now)) {
            const Service& s = supervisor.service(index);
            result.not_ready.push_back(NotReady{s.name(), s.state(), std::move(*reason)});
        }
    }
    result.ready = result.not_ready.empty() && !supervisor.shutting_down();
    return result;
}

}  // namespace pkit::core
