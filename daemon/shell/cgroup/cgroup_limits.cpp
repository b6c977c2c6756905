#include "daemon/shell/cgroup/cgroup_limits.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace pkit::shell {
namespace {

constexpr std::int64_t k_cpu_period_us = 100000;

std::string number(std::uint64_t value) {
    return std::to_string(value);
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

}  // namespace pkit::shell
