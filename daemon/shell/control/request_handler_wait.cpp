// `wait` (SPEC §9): the reply comes when every named service has reached the
// condition, or as soon as one cannot reach it any more, or at `within`. Nothing polls:
// check_waits() runs after every pump (every state change goes through one), and the
// `within` deadline is handed to the daemon's one timer (DaemonPort::wake_at), whose
// firing pumps.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <utility>

#include "daemon/shell/control/request_handler.hpp"

namespace pkit::shell {

namespace {

std::string seconds_words(double seconds) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", seconds);
    return std::string(buf) + " s";
}

}  // namespace

core::WaitFor RequestHandler::wait_for_of(const std::string& name) {
    if (name == "done") {
        return core::WaitFor::done;
    }
    if (name == "stopped") {
        return core::WaitFor::stopped;
    }
    return core::WaitFor::ready;
}

void RequestHandler::handle_wait(ConnectionId connection, const proto::Request& request) {
    auto services = targets(connection, request);
    if (!services) {
        return;
    }
    core::TimePoint now = m_daemon.now().mono;
    auto within =
        std::chrono::duration_cast<core::Duration>(std::chrono::duration<double>(request.within));
    Wait wait{connection,
              request.id,
              std::move(*services),
              wait_for_of(request.wait_for),
              now + within,
              request.within,
              {}};
    // A scheduled job's `done` is the end of an episode that ends from now on.
    for (std::size_t i : wait.services) {
        wait.episodes.push_back(m_daemon.supervisor().service(i).schedule().episodes_ended);
    }
    if (answer_wait(wait, now)) {
        return;
    }
    m_daemon.wake_at(wait.deadline);
    m_waits.push_back(std::move(wait));
}

bool RequestHandler::answer_wait(const Wait& wait, core::TimePoint now) {
    const core::Supervisor& sup = m_daemon.supervisor();
    const core::Service* pending = nullptr;
    for (std::size_t k = 0; k < wait.services.size(); ++k) {
        const core::Service& s = sup.service(wait.services[k]);
        core::WaitCheck check = core::check_wait(s, wait.condition, wait.episodes[k]);
        if (check.verdict == core::WaitVerdict::unreachable) {
            reply_error(wait.connection, wait.id, proto::ErrorCode::not_reached,
                        check.reason + "; it cannot become " +
                            std::string(core::to_string(wait.condition)) + " without an operator");
            return true;
        }
        if (check.verdict == core::WaitVerdict::pending && pending == nullptr) {
            pending = &s;
        }
    }
    if (pending == nullptr) {
        reply_ok(wait.connection, wait.id, services_json(wait.services));
        return true;
    }
    if (now >= wait.deadline) {
        reply_error(wait.connection, wait.id, proto::ErrorCode::not_reached,
                    pending->name() + " is " + std::string(core::to_string(pending->state())) +
                        ", not " + std::string(core::to_string(wait.condition)) + " within " +
                        seconds_words(wait.within));
        return true;
    }
    return false;
}

void RequestHandler::check_waits() {
    if (m_waits.empty()) {
        return;
    }
    core::TimePoint now = m_daemon.now().mono;
    std::vector<Wait> waits = std::move(m_waits);
    m_waits.clear();
    for (Wait& wait : waits) {
        if (!answer_wait(wait, now)) {
            m_waits.push_back(std::move(wait));
        }
    }
}

}  // namespace pkit::shell
