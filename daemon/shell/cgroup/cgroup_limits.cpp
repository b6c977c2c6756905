#include "daemon/shell/cgroup/cgroup_limits.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <set>

namespace pkit::shell {
namespace {

constexpr std::int64_t k_cpu_period_us = 100000;

std::string number(std::uint64_t value) {
    return std::to_string(value);
}

// Where `key` of [resources] is written in `text` (a service file): its line and column,
// or 1:1 when not found (a dotted key, an inline table).
std::pair<int, int> key_position(std::string_view text, std::string_view key) {
    bool in_resources = false;
    int line = 0;
    while (!text.empty()) {
        std::size_t end = text.find('\n');
        std::string_view l = text.substr(0, end);
        text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
        ++line;
        std::size_t start = l.find_first_not_of(" \t");
        if (start == std::string_view::npos) {
            continue;
        }
        std::string_view rest = l.substr(start);
        if (rest.starts_with('[')) {
            std::size_t close = rest.find(']');
            std::string_view name = rest.substr(1, close == std::string_view::npos ? 0 : close - 1);
            while (!name.empty() && (name.front() == ' ' || name.front() == '\t')) {
                name.remove_prefix(1);
            }
            while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) {
                name.remove_suffix(1);
            }
            in_resources = name == "resources";
            continue;
        }
        if (in_resources && rest.starts_with(key)) {
            std::string_view after = rest.substr(key.size());
            std::size_t sign = after.find_first_not_of(" \t");
            if (sign != std::string_view::npos && after[sign] == '=') {
                return {line, static_cast<int>(start) + 1};
            }
        }
    }
    return {1, 1};
}

}  // namespace

std::vector<LimitWrite> limit_writes(const config::ResourceLimits& limits,
                                     const config::ResourceLimits& before) {
    std::vector<LimitWrite> writes;
    auto add = [&](const char* key, const char* controller, const char* file, const auto& value,
                   const auto& old, auto text_of, const char* fallback) {
        if (value) {
            writes.push_back({key, controller, file, text_of(*value)});
        } else if (old) {
            writes.push_back({key, controller, file, fallback});
        }
    };
    auto bytes = [](std::uint64_t v) { return number(v); };
    auto integer = [](std::int64_t v) { return std::to_string(v); };
    auto cores = [](double v) {
        auto quota = static_cast<std::int64_t>(std::llround(v * k_cpu_period_us));
        return std::to_string(std::max<std::int64_t>(quota, 1000)) + " " +
               std::to_string(k_cpu_period_us);
    };
    add("cpu_max", "cpu", "cpu.max", limits.cpu_max, before.cpu_max, cores, "max 100000");
    add("cpu_weight", "cpu", "cpu.weight", limits.cpu_weight, before.cpu_weight, integer, "100");
    add(
        "io_weight", "io", "io.weight", limits.io_weight, before.io_weight,
        [](std::int64_t v) { return "default " + std::to_string(v); }, "default 100");
    add("memory_high", "memory", "memory.high", limits.memory_high, before.memory_high, bytes,
        "max");
    add("memory_max", "memory", "memory.max", limits.memory_max, before.memory_max, bytes, "max");
    add("pids_max", "pids", "pids.max", limits.pids_max, before.pids_max, integer, "max");
    return writes;
}

LimitReport apply_limits_to(const CgroupTree& tree, std::string_view name,
                            const config::ResourceLimits& limits,
                            const config::ResourceLimits& before) {
    LimitReport report;
    const config::ResourceLimits none;
    const std::vector<LimitWrite> wanted = limit_writes(limits, none);
    for (const LimitWrite& w : limit_writes(limits, before)) {
        bool reported = std::ranges::find(wanted, w.key, &LimitWrite::key) != wanted.end();
        if (std::ranges::find(tree.controllers(), w.controller) == tree.controllers().end()) {
            if (reported) {
                report.not_applied.emplace_back(
                    w.key,
                    "the " + w.controller + " controller is not available in " + tree.root());
            }
            continue;
        }
        auto written = write_file(tree.dir(name) + "/" + w.file, w.text);
        if (!reported) {
            continue;
        }
        if (written) {
            report.applied.push_back(w.key);
        } else {
            report.not_applied.emplace_back(
                w.key, "cannot write " + w.file + ": " + std::strerror(written.error()));
        }
    }
    return report;
}

LimitReport limits_not_applied(const config::ResourceLimits& limits, const std::string& reason) {
    LimitReport report;
    for (const LimitWrite& w : limit_writes(limits)) {
        report.not_applied.emplace_back(w.key, reason);
    }
    return report;
}

std::string describe_not_applied(const LimitReport& report) {
    std::string text;
    for (const auto& [key, reason] : report.not_applied) {
        text += (text.empty() ? "" : "; ") + key + " (" + reason + ")";
    }
    return text;
}

std::vector<config::Diagnostic> limit_warnings(const config::Tree& tree, const CgroupChoice& choice,
                                               const std::vector<std::string>& available) {
    std::vector<config::Diagnostic> warnings;
    std::set<std::string> files;
    for (const config::ServiceSpec& spec : tree.services) {
        const std::vector<LimitWrite> writes = limit_writes(*spec.resources);
        if (writes.empty() || !files.insert(spec.file).second) {
            continue;
        }
        std::optional<std::string> text;  // read for the first key to report
        for (const LimitWrite& w : writes) {
            std::string why;
            if (!choice.enabled) {
                why = "cgroups not used: " + choice.reason;
            } else if (std::ranges::find(available, w.controller) == available.end()) {
                why = "the " + w.controller + " controller is not available in " + choice.path;
            } else {
                continue;
            }
            if (!text) {
                text = read_small_file(spec.file).value_or("");
            }
            auto [line, column] = key_position(*text, w.key);
            config::Diagnostic d;
            d.file = spec.file;
            d.line = line;
            d.column = column;
            d.message = "resources." + w.key + ": not applied: " + why;
            d.warning = true;
            warnings.push_back(std::move(d));
        }
    }
    return warnings;
}

std::vector<config::Diagnostic> required_limit_errors(const config::Tree& tree,
                                                      const CgroupChoice& choice,
                                                      const std::vector<std::string>& available) {
    if (tree.daemon.cgroups != config::CgroupMode::required || !choice.enabled) {
        return {};
    }
    std::vector<config::Diagnostic> errors = limit_warnings(tree, choice, available);
    for (config::Diagnostic& d : errors) {
        d.warning = false;
        const std::string cut = ": not applied: ";
        if (auto at = d.message.find(cut); at != std::string::npos) {
            d.message.replace(at, cut.size(), ": cannot be applied: ");
        }
        d.message += " (cgroups = \"required\")";
    }
    return errors;
}

namespace {

// The cgroup pkitd would use, found from `proc_self`, and its available controllers.
std::pair<CgroupChoice, std::vector<std::string>> cgroup_here(const config::Tree& tree,
                                                              const std::string& proc_self) {
    const config::CgroupMode mode = tree.daemon.cgroups;
    CgroupChoice choice = choose_cgroup(
        mode, mode == config::CgroupMode::off ? CgroupFacts{} : gather_cgroup_facts(proc_self));
    std::vector<std::string> available;
    if (choice.enabled) {
        available = cgroup_words(read_small_file(choice.path + "/cgroup.controllers").value_or(""));
    }
    return {std::move(choice), std::move(available)};
}

}  // namespace

std::vector<config::Diagnostic> limit_warnings(const config::Tree& tree,
                                               const std::string& proc_self) {
    auto [choice, available] = cgroup_here(tree, proc_self);
    return limit_warnings(tree, choice, available);
}

std::vector<config::Diagnostic> required_limit_errors(const config::Tree& tree,
                                                      const std::string& proc_self) {
    if (tree.daemon.cgroups != config::CgroupMode::required) {
        return {};
    }
    auto [choice, available] = cgroup_here(tree, proc_self);
    return required_limit_errors(tree, choice, available);
}

}  // namespace pkit::shell
