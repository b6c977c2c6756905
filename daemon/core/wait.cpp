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

WaitCheck check_wait(const Service& s, WaitFor condition) {
    const State state = s.state();
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
