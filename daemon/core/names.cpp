#include "daemon/core/types.hpp"

namespace pkit::core {

std::string_view to_string(State state) {
    switch (state) {
        case State::waiting:
            return "waiting";
        case State::starting:
            return "starting";
        case State::running:
            return "running";
        case State::stopping:
            return "stopping";
        case State::backoff:
            return "backoff";
        case State::storm_pause:
            return "storm_pause";
        case State::stopped:
            return "stopped";
        case State::done:
            return "done";
        case State::failed:
            return "failed";
        case State::scheduled:
            return "scheduled";
        case State::paused:
            return "paused";
    }
    return "unknown";
}

std::string_view to_string(StopReason reason) {
    switch (reason) {
        case StopReason::policy_satisfied:
            return "policy_satisfied";
        case StopReason::predicate:
            return "predicate";
        case StopReason::restarts_exhausted:
            return "restarts_exhausted";
        case StopReason::gave_up:
            return "gave_up";
        case StopReason::unhealthy:
            return "unhealthy";
        case StopReason::operator_:
            return "operator";
    }
    return "unknown";
}

std::string_view to_string(KilledBy by) {
    switch (by) {
        case KilledBy::none:
            return "none";
        case KilledBy::liveness:
            return "liveness";
        case KilledBy::timeout:
            return "timeout";
        case KilledBy::ready_timeout:
            return "ready_timeout";
        case KilledBy::operator_:
            return "operator";
        case KilledBy::memory:
            return "memory";
    }
    return "unknown";
}

std::string_view to_string(EventType type) {
    switch (type) {
        case EventType::started:
            return "started";
        case EventType::ready:
            return "ready";
        case EventType::exited:
            return "exited";
        case EventType::restarting:
            return "restarting";
        case EventType::storm_pause:
            return "storm_pause";
        case EventType::liveness_kill:
            return "liveness_kill";
        case EventType::health:
            return "health";
        case EventType::stopped:
            return "stopped";
        case EventType::gave_up:
            return "gave_up";
        case EventType::restarts_exhausted:
            return "restarts_exhausted";
        case EventType::group_failed:
            return "group_failed";
        case EventType::escalated:
            return "escalated";
        case EventType::reload:
            return "reload";
        case EventType::missed:
            return "missed";
        case EventType::paused:
            return "paused";
        case EventType::resumed:
            return "resumed";
        case EventType::log_error:
            return "log_error";
    }
    return "unknown";
}

std::string_view to_string(Stream stream) {
    return stream == Stream::stdout_ ? "stdout" : "stderr";
}

std::string_view to_string(HealthStatus status) {
    switch (status) {
        case HealthStatus::unknown:
            return "unknown";
        case HealthStatus::healthy:
            return "healthy";
        case HealthStatus::unhealthy:
            return "unhealthy";
    }
    return "unknown";
}

}  // namespace pkit::core
