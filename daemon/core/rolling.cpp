// Rolling restarts (SPEC §14): one service at a time, each through before the next.

#include "daemon/core/supervisor.hpp"

namespace pkit::core {

namespace {

// Whether the restart of `s` asked at run `noted` is through: nullopt while it is under
// way; else the failure, or an empty string for a success.
std::optional<std::string> restart_result(const Service& s, std::uint64_t noted) {
    if (const Replacement* r = s.replacement(); r != nullptr && r->old_run == noted) {
        if (!r->done) {
            return std::nullopt;
        }
        if (!r->failure) {
            return std::string();
        }
        std::string why = *r->failure;
        why += "; run ";
        why += std::to_string(noted);
        why += " keeps running";
        return why;
    }
    if (s.run() == noted) {
        return std::nullopt;  // the old run is still being stopped, or not yet relaunched
    }
    switch (s.state()) {
        case State::running:
            if (s.ready()) {
                return std::string();
            }
            return std::nullopt;
        case State::done:
        case State::scheduled:  // a scheduled job's new episode has ended: back to its ticks
            return std::string();
        case State::waiting:
        case State::starting:
        case State::stopping:
        case State::paused:  // the new run, paused by the operator: the roll waits for it
            return std::nullopt;
        case State::backoff:
        case State::storm_pause:
        case State::failed:
            return "run " + std::to_string(s.run()) + " ended before it was ready";
        case State::stopped:
            return std::string("stopped before its new run was ready");
    }
    return std::nullopt;
}

}  // namespace

std::size_t Supervisor::restart_rolling(std::vector<std::size_t> services, Now now) {
    m_rolls.push_back(Roll{std::move(services)});
    ++m_rolls_active;
    settle(now);
    return m_rolls.size() - 1;
}

void Supervisor::settle_rolls(Now now) {
    if (m_rolls_active == 0) {
        return;
    }
    for (Roll& roll : m_rolls) {
        if (roll.done) {
            continue;
        }
        if (roll.next > 0) {
            const Service& s = *m_services[roll.services[roll.next - 1]];
            std::optional<std::string> result =
                m_shutting_down ? std::optional<std::string>("pkitd is shutting down")
                                : restart_result(s, roll.noted_run);
            if (!result) {
                continue;
            }
            if (!result->empty()) {
                roll.failure = s.name() + ": " + *result;
            }
        }
        if (roll.failure || roll.next == roll.services.size()) {
            roll.done = true;
            --m_rolls_active;
            continue;
        }
        std::size_t i = roll.services[roll.next++];
        roll.noted_run = m_services[i]->run();
        restart_one(i, now);
    }
}

}  // namespace pkit::core
