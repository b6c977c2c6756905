#pragma once
// `explain` (SPEC §9): why a service is in its state and what happens next, in plain
// words, with the facts behind them. The facts are read from the same records the
// gates wrote when they decided (Service::last_decision, the policy state), never
// recomputed beside them.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "daemon/core/supervisor.hpp"

namespace pkit::core {

using FactValue = std::variant<std::nullptr_t, bool, std::int64_t, double, std::string>;

struct Explanation {
    std::string text;
    std::vector<std::pair<std::string, FactValue>> facts;
};

Explanation explain(const Supervisor& supervisor, std::size_t service, Now now);

// A count and its noun, singular or plural: "1 restart", "0 restarts", "4 restarts".
// `noun` is the singular; the plural adds an "s".
std::string count_words(long long count, std::string_view noun);

// A figure in words, with one decimal: "1.6" (every rounded figure of explain and
// readiness goes through it).
std::string one_decimal(double value);
// The seconds left before the service's pending restart; 0 without one, or when due.
double restart_in(const Service& s, Now now);
// "restart 3 in 1.6 s": the restart about to happen and the time left before it.
std::string restart_words(const Service& s, Now now);
// "paused by the operator since 14:03:09 UTC (12s ago)" (SPEC §15).
std::string paused_words(const Service& s, Now now);
// Why supervision ended (SPEC §5 `stopped`), or "unknown".
std::string stopped_words(const Service& s);

// Appends the facts that describe the service's definition (explain_definition.cpp):
// command, cwd, user, unix_group, after, policy, within, liveness, readiness.
void add_definition_facts(const config::ServiceSpec& spec,
                          std::vector<std::pair<std::string, FactValue>>& facts);

}  // namespace pkit::core
