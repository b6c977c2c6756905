#include "daemon/core/wait.hpp"

namespace pkit::core {

namespace {

std::string ended_words(const Service& s) {
    std::string text = s.name() + " is " + std::string(to_string(s.state()));
    if (s.stopped_reason()) {
        text += " (" + std::string(to_string(*s.stopped_reason())) + ")";
    }
    if (s.state() == State::stopped) {
        return text + ": stopped by the operator or autostart = false; `pkitctl start " + s.name() +
               "` starts it";
    }
    const std::string& why = s.last_decision().why;
    if (!why.empty()) {
        text += ": " + why;
    }
    return text;
}

}  // namespace

namespace {

WaitCheck check_episode(const Service& s, WaitFor condition, std::uint64_t episodes_before) {
    const ScheduleRecord& r = s.schedule();
    if (condition == WaitFor::ready && r.succeeded) {
        return {WaitVerdict::reached, {}};
    }
    if (r.episodes_ended > episodes_before) {
        if (r.last_result == State::done) {
            return {WaitVerdict::reached, {}};
        }
        std::string why = s.last_decision().why;
        return {WaitVerdict::unreachable,
                s.name() + "'s latest episode failed" + (why.empty() ? "" : ": " + why)};
    }
    if (s.state() == State::stopped) {
        return {WaitVerdict::unreachable, ended_words(s)};
    }
    return {WaitVerdict::pending, {}};
}

}  // namespace

WaitCheck check_wait(const Service& s, WaitFor condition, std::uint64_t episodes_before) {
    const State state = s.state();
    if (s.has_schedule() && condition != WaitFor::stopped) {
        return check_episode(s, condition, episodes_before);
    }
    const bool ended = state == State::stopped || state == State::done || state == State::failed;
    switch (condition) {
        case WaitFor::ready:
            if ((state == State::running && s.ready()) || state == State::done) {
                return {WaitVerdict::reached, {}};
            }
            break;
        case WaitFor::done:
            if (state == State::done) {
                return {WaitVerdict::reached, {}};
            }
            break;
        case WaitFor::stopped:
            return {ended ? WaitVerdict::reached : WaitVerdict::pending, {}};
    }
    if (ended) {
        return {WaitVerdict::unreachable, ended_words(s)};
    }
    return {WaitVerdict::pending, {}};
}

std::string_view to_string(WaitFor condition) {
    switch (condition) {
        case WaitFor::ready:
            return "ready";
        case WaitFor::done:
            return "done";
        case WaitFor::stopped:
            return "stopped";
    }
    return "?";
}

}  // namespace pkit::core
