// The facts of `explain` that describe how a service is defined (its command, cwd,
// user, `after`, restart window and probes), so `pkitctl show` can put them on its
// screen from what pkitd runs, not from files that may have changed since a reload.

#include "config/values.hpp"
#include "daemon/core/explain.hpp"

namespace pkit::core {
namespace {

// A word of a command as a shell would need it: quoted when it holds anything but
// plain characters.
std::string shell_word(const std::string& word) {
    if (!word.empty() &&
        word.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                               "0123456789_-./=:,+@%") == std::string::npos) {
        return word;
    }
    std::string quoted = "'";
    for (char c : word) {
        quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    return quoted + "'";
}

std::string words(const std::vector<std::string>& argv) {
    std::string text;
    for (const auto& word : argv) {
        text += (text.empty() ? "" : " ") + shell_word(word);
    }
    return text;
}

FactValue principal(const config::Principal& p) {
    if (p.name) {
        return *p.name;
    }
    if (p.id) {
        return std::to_string(*p.id);
    }
    return nullptr;
}

// "http http://127.0.0.1:8080/ every 10s, timeout 1s, 3 failures"; nullopt without one.
std::optional<std::string> probe_words(const config::ProbeSpec& probe, bool liveness) {
    if (!probe.enabled()) {
        return std::nullopt;
    }
    std::string text(config::to_string(probe.kind));
    if (probe.kind == config::ProbeKind::watchdog) {
        return text + " " + config::format_duration(probe.watchdog);
    }
    text += " " + (probe.kind == config::ProbeKind::exec ? words(probe.argv) : probe.target);
    text += " every " + config::format_duration(probe.interval) + ", timeout " +
            config::format_duration(probe.timeout);
    if (liveness) {
        text += ", " + std::to_string(probe.failures) + " failures";
    }
    return text;
}

// Words as a fact, null without them. (A FactValue is built once, never assigned: a
// variant's assignment carries a throw of bad_variant_access, which the core has none of.)
FactValue or_null(std::optional<std::string> text) {
    return text ? FactValue(std::move(*text)) : FactValue(nullptr);
}

}  // namespace

void add_definition_facts(const config::ServiceSpec& spec,
                          std::vector<std::pair<std::string, FactValue>>& facts) {
    auto fact = [&](std::string key, FactValue value) {
        facts.emplace_back(std::move(key), std::move(value));
    };
    fact("command", words(spec.command));
    const config::ProcessSpec& process = *spec.process;
    fact("cwd", process.cwd ? FactValue(*process.cwd) : FactValue(nullptr));
    fact("user", principal(process.user));
    fact("unix_group", principal(process.group));
    std::string after;
    for (const auto& name : spec.after) {
        after += (after.empty() ? "" : ", ") + name;
    }
    fact("after", after.empty() ? FactValue(nullptr) : FactValue(after));
    fact("policy", std::string(config::to_string(spec.restart.policy)));
    fact("within", config::to_seconds(spec.restart.within));
    fact("liveness", or_null(probe_words(*spec.health, true)));
    std::optional<std::string> readiness = spec.ready->notify
                                               ? std::optional<std::string>("notify")
                                               : probe_words(spec.ready->probe, false);
    if (readiness) {  // notify or a probe: [ready] is enabled
        *readiness += ", within " + config::format_duration(spec.ready->timeout);
    }
    fact("readiness", or_null(std::move(readiness)));
}

}  // namespace pkit::core
