#include "ctl/render.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <unordered_map>

#include "config/values.hpp"
#include "ctl/status_filter.hpp"

namespace pkit::ctl {
namespace {

constexpr std::string_view k_green = "\033[32m";
constexpr std::string_view k_yellow = "\033[33m";
constexpr std::string_view k_red = "\033[31m";
constexpr std::string_view k_cyan = "\033[36m";
constexpr std::string_view k_reset = "\033[0m";

// Green when all is well, red when supervision ended in failure, cyan while the
// operator holds a run paused, yellow in between.
std::string_view state_color(const std::string& state) {
    if (state == "running" || state == "done" || state == "scheduled") {
        return k_green;
    }
    if (state == "failed") {
        return k_red;
    }
    if (state == "paused") {
        return k_cyan;
    }
    return k_yellow;
}

struct Cell {
    std::string text;
    std::string_view color;  // empty: none
};

using Row = std::vector<Cell>;

// The table of `count` rows that `fill(i, row)` writes, each cell padded to its column's
// width, measured on the visible text so colour codes do not upset the alignment; the
// last column is not padded. Each row is filled twice into one reused Row, widths first
// and then the text, so that no table of cells is held: at 1,000 services that table
// was ~100 pages, and on a VM each page is a fault of ~25 us.
//
// With a `width` (a terminal's columns; 0: none), a table wider than it has its first
// column (the names) narrowed to fit (narrowed_names), each longer name cut with "…".

template <typename Fill>
std::string layout(std::size_t count, const Fill& fill, bool color, std::size_t width = 0) {
    Row row;
    std::vector<std::size_t> widths;
    std::size_t line_width = 0;
    for (std::size_t r = 0; r < count; ++r) {
        fill(r, row);
        widths.resize(std::max(widths.size(), row.size()));
        std::size_t line = 0;
        for (std::size_t i = 0; i < row.size(); ++i) {
            widths[i] = std::max(widths[i], row[i].text.size());
            line += row[i].text.size() + 2;
        }
        line_width = std::max(line_width, line);
    }
    const std::optional<std::size_t> name_columns = narrowed_names(widths, width);
    if (name_columns) {
        widths[0] = *name_columns;
    }
    std::string out;
    out.reserve(count * (line_width + 1));
    std::string line;
    for (std::size_t r = 0; r < count; ++r) {
        fill(r, row);
        if (name_columns && !row.empty()) {
            row[0].text = fit_columns(row[0].text, *name_columns);
        }
        line.clear();
        for (std::size_t i = 0; i < row.size(); ++i) {
            const Cell& cell = row[i];
            // Colour the text only, not the padding after it.
            const bool colored = color && !cell.color.empty() && !cell.text.empty();
            if (colored) {
                line += cell.color;
            }
            line += cell.text;
            if (colored) {
                line += k_reset;
            }
            if (i + 1 < row.size()) {
                line.append(widths[i] - columns_of(cell.text) + 2, ' ');
            }
        }
        while (!line.empty() && line.back() == ' ') {
            line.pop_back();
        }
        out += line;
        out += '\n';
    }
    return out;
}

// A TYPE column ("service" or "oneshot") is drawn only when a oneshot job is listed:
// a table of services alone reads as before.
bool any_oneshot(const std::vector<proto::ServiceStatus>& services) {
    return std::ranges::any_of(services, [](const auto& s) { return s.type == "oneshot"; });
}

void status_row(Row& row, const proto::ServiceStatus& status, std::string_view name,
                const std::string* group, bool with_type, double now) {
    row.clear();
    row.push_back({std::string(name), {}});
    if (group != nullptr) {
        row.push_back({*group, {}});
    }
    if (with_type) {
        row.push_back({status.type, {}});
    }
    row.push_back({status.state, state_color(status.state)});
    row.push_back({status.pid ? std::to_string(*status.pid) : "-", {}});
    row.push_back({uptime_cell(status, now), {}});
    row.push_back({std::to_string(status.restarts), {}});
    row.push_back({last_exit_text(status), {}});
    row.push_back({health_text(status), status.health && status.health->status == "unhealthy"
                                            ? k_red
                                            : std::string_view{}});
    if (status.resources.asked) {
        const auto& used = status.resources.value;
        row.push_back({used ? std::to_string(used->processes) : "-", {}});
        row.push_back({used ? cpu_text(used->cpu_seconds) : "-", {}});
        row.push_back({used ? memory_text(used->rss_bytes) : "-", {}});
    }
}

bool any_resources(const std::vector<proto::ServiceStatus>& services) {
    return std::ranges::any_of(services, [](const auto& s) { return s.resources.asked; });
}

void header(Row& row, bool with_group, bool with_type, bool with_resources) {
    row.clear();
    row.push_back({"NAME", {}});
    if (with_group) {
        row.push_back({"GROUP", {}});
    }
    if (with_type) {
        row.push_back({"TYPE", {}});
    }
    for (auto title : {"STATE", "PID", "UPTIME", "RESTARTS", "LAST EXIT", "HEALTH"}) {
        row.push_back({title, {}});
    }
    if (with_resources) {
        for (auto title : {"PROCS", "CPU", "MEM"}) {
            row.push_back({title, {}});
        }
    }
}

}  // namespace

std::string uptime_text(std::optional<double> seconds) {
    if (!seconds) {
        return "-";
    }
    auto duration = std::chrono::duration_cast<config::Duration>(
        std::chrono::duration<double>(std::max(0.0, *seconds)));
    return config::format_duration(duration);
}

std::string uptime_cell(const proto::ServiceStatus& status, double now) {
    if (status.state == "scheduled" && status.schedule && status.schedule->next) {
        return "in " + uptime_text(std::max(0.0, *status.schedule->next - now));
    }
    return uptime_text(status.uptime);
}

std::string last_exit_text(const proto::ServiceStatus& status) {
    // A launch failure is newer than last_exit: the next successful launch clears it.
    if (status.last_launch_error) {
        const auto& error = *status.last_launch_error;
        return "launch failed: " + error.substr(0, error.find(':'));
    }
    if (!status.last_exit) {
        return "-";
    }
    const auto& exit = *status.last_exit;
    std::string text = exit.signal ? *exit.signal
                       : exit.code ? "exit " + std::to_string(*exit.code)
                                   : "?";
    if (exit.killed_by) {
        text += " (" + *exit.killed_by + ")";
    } else if (exit.timed_out) {
        text += " (timeout)";
    } else if (exit.oom_killed) {
        text += " (oom)";
    }
    return text;
}

std::string memory_text(std::int64_t bytes) {
    constexpr std::array<char, 4> k_units{'K', 'M', 'G', 'T'};
    if (bytes < 1024) {
        return std::to_string(std::max<std::int64_t>(bytes, 0)) + "B";
    }
    double value = static_cast<double>(bytes) / 1024;
    std::size_t unit = 0;
    while (value >= 1024 && unit + 1 < k_units.size()) {
        value /= 1024;
        ++unit;
    }
    char buf[32];
    if (value < 10) {
        std::snprintf(buf, sizeof buf, "%.1f%c", value, k_units[unit]);
    } else {
        std::snprintf(buf, sizeof buf, "%.0f%c", value, k_units[unit]);
    }
    return buf;
}

std::string cpu_text(double seconds) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", seconds);
    return buf;
}

std::string health_text(const proto::ServiceStatus& status) {
    return status.health ? status.health->status : "-";
}

std::string render_table(const std::vector<proto::ServiceStatus>& services, bool color,
                         std::size_t width, double now) {
    const bool with_group = std::ranges::any_of(
        services, [](const proto::ServiceStatus& s) { return s.group.has_value(); });
    const bool with_type = any_oneshot(services);
    const bool with_resources = any_resources(services);
    const std::string no_group = "-";
    auto fill = [&](std::size_t r, Row& row) {
        if (r == 0) {
            header(row, with_group, with_type, with_resources);
            return;
        }
        const proto::ServiceStatus& status = services[r - 1];
        const std::string* group = nullptr;
        if (with_group) {
            group = status.group ? &*status.group : &no_group;
        }
        status_row(row, status, status.name, group, with_type, now);
    };
    return layout(services.size() + 1, fill, color, width);
}

namespace {

struct TreeLine {
    const proto::ServiceStatus* status;  // null: a group's or an instance set's line
    std::string name;
};

// `services` as lines indented by `indent`, each file's instances (NAME@I) under one line
// "NAME" where its first instance comes, one step further in.
void add_with_instances(std::vector<TreeLine>& lines,
                        const std::vector<const proto::ServiceStatus*>& services,
                        const std::string& indent) {
    std::unordered_map<std::string_view, std::vector<const proto::ServiceStatus*>> sets;
    for (const proto::ServiceStatus* status : services) {
        auto at = status->name.find('@');
        if (at != std::string::npos) {
            sets[std::string_view(status->name).substr(0, at)].push_back(status);
        }
    }
    for (const proto::ServiceStatus* status : services) {
        auto at = status->name.find('@');
        if (at == std::string::npos) {
            lines.push_back({status, indent + status->name});
            continue;
        }
        auto& set = sets[std::string_view(status->name).substr(0, at)];
        if (set.empty()) {
            continue;  // drawn already
        }
        lines.push_back({nullptr, indent + status->name.substr(0, at)});
        for (const proto::ServiceStatus* instance : set) {
            lines.push_back({instance, indent + "  " + instance->name});
        }
        set.clear();
    }
}

}  // namespace

std::string render_tree(const std::vector<proto::ServiceStatus>& services, bool color,
                        std::size_t width, double now) {
    const bool with_type = any_oneshot(services);
    const bool with_resources = any_resources(services);
    // The lines in order: a service, or a group's line (status null) followed by its
    // members, indented. A group is drawn where its first member starts, members in start
    // order; a file's instances under one line of their own (add_with_instances).
    using Line = TreeLine;
    std::vector<Line> lines;
    // Each group's members in start order, gathered in one pass; a group is drawn with
    // all of them where its first member comes.
    std::unordered_map<std::string_view, std::vector<const proto::ServiceStatus*>> members;
    for (const auto& status : services) {
        if (status.group) {
            members[*status.group].push_back(&status);
        }
    }
    // Services in no group between groups, gathered until the next group's line.
    std::vector<const proto::ServiceStatus*> loose;
    for (const auto& status : services) {
        if (!status.group) {
            loose.push_back(&status);
            continue;
        }
        auto it = members.find(*status.group);
        if (it->second.empty()) {
            continue;  // drawn already
        }
        add_with_instances(lines, loose, "");
        loose.clear();
        lines.push_back({nullptr, *status.group + "/"});
        add_with_instances(lines, it->second, "  ");
        it->second.clear();
    }
    add_with_instances(lines, loose, "");
    auto fill = [&](std::size_t r, Row& row) {
        if (r == 0) {
            header(row, false, with_type, with_resources);
            return;
        }
        const Line& line = lines[r - 1];
        if (line.status == nullptr) {
            row.clear();
            row.push_back({line.name, {}});
            return;
        }
        status_row(row, *line.status, line.name, nullptr, with_type, now);
    };
    return layout(lines.size() + 1, fill, color, width);
}

}  // namespace pkit::ctl
