#include "tests/unit/core/fake.hpp"

namespace pkit::core::test {

namespace {

std::string exit_text(const ExitRecord& exit) {
    std::string text;
    if (exit.code) {
        text += " code " + std::to_string(*exit.code);
    }
    if (exit.signal) {
        text += " signal " + signal_text(*exit.signal);
    }
    if (exit.timed_out) {
        text += " timed_out";
    }
    if (exit.killed_by != KilledBy::none) {
        text += " by " + std::string(to_string(exit.killed_by));
    }
    if (exit.oom_killed) {
        text += " oom";
    }
    return text;
}

}  // namespace

std::string describe(const Event& e) {
    std::string text = std::string(to_string(e.type)) + " " + e.service;
    if (e.group) {
        text += " [" + *e.group + "]";
    }
    text += " r" + std::to_string(e.run);
    switch (e.type) {
        case EventType::started:
            text += " pid " + std::to_string(e.pid);
            break;
        case EventType::exited:
            if (e.exit) {
                text += exit_text(*e.exit);
            }
            if (e.launch_error) {
                text += " launch_error " + std::string(config::to_string(e.launch_error->kind));
            }
            if (!e.reason.empty()) {
                text += " (" + e.reason + ")";
            }
            break;
        case EventType::ready:
            if (!e.reason.empty()) {
                text += " (" + e.reason + ")";
            }
            break;
        case EventType::restarting:
            text += " in " + ms_text(e.delay) + " #" + std::to_string(e.restart);
            break;
        case EventType::storm_pause:
            text += " for " + ms_text(e.delay);
            break;
        case EventType::resumed:
            text += " (" + e.reason + ")";
            break;
        default:
            break;
    }
    return text;
}

std::string describe(const Action& action) {
    if (const auto* a = std::get_if<SpawnAction>(&action)) {
        return "spawn " + std::to_string(a->service) + " r" + std::to_string(a->run);
    }
    if (const auto* a = std::get_if<SignalAction>(&action)) {
        return "signal " + std::to_string(a->service) + " r" + std::to_string(a->run) + " pid " +
               std::to_string(a->pid) + " " + signal_text(a->signal) +
               (a->group ? " group" : " process") + (a->then_cont ? " +cont" : "");
    }
    if (const auto* a = std::get_if<CleanupGroupAction>(&action)) {
        return "cleanup " + std::to_string(a->service) + " pgid " + std::to_string(a->pgid) + " " +
               signal_text(a->signal) + " grace " + ms_text(a->grace);
    }
    if (const auto* a = std::get_if<EmitAction>(&action)) {
        return describe(a->event);
    }
    if (const auto* a = std::get_if<FreezeAction>(&action)) {
        return std::string(a->frozen ? "freeze " : "thaw ") + std::to_string(a->service) + " r" +
               std::to_string(a->run);
    }
    if (const auto* a = std::get_if<ProbeAction>(&action)) {
        return "probe " + std::to_string(a->service) + " r" + std::to_string(a->run) +
               (a->purpose == ProbePurpose::ready ? " ready" : " health");
    }
    const auto& exit = std::get<ExitAction>(action);
    return "exit " + std::to_string(exit.status);
}

std::string trace(const std::vector<Action>& actions) {
    std::string text;
    for (const Action& a : actions) {
        if (!text.empty()) {
            text += " | ";
        }
        text += describe(a);
    }
    return text;
}

}  // namespace pkit::core::test
