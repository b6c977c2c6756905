#include "ctl/render.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "config/values.hpp"

namespace pkit::ctl {
namespace {

constexpr std::string_view k_green = "\033[32m";
constexpr std::string_view k_yellow = "\033[33m";
constexpr std::string_view k_red = "\033[31m";
constexpr std::string_view k_reset = "\033[0m";

// Green when all is well, red when supervision ended in failure, yellow in between.
std::string_view state_color(const std::string& state) {
    if (state == "running" || state == "done") {
        return k_green;
    }
    if (state == "failed") {
        return k_red;
    }
    return k_yellow;
}

struct Cell {
    std::string text;
    std::string_view color;  // empty: none
};

using Row = std::vector<Cell>;

// Pads each cell to its column's width, measured on the visible text, so colour codes
// do not upset the alignment. The last column is not padded.
std::string layout(const std::vector<Row>& rows, bool color) {
    std::vector<std::size_t> widths;
    for (const auto& row : rows) {
        widths.resize(std::max(widths.size(), row.size()));
        for (std::size_t i = 0; i < row.size(); ++i) {
            widths[i] = std::max(widths[i], row[i].text.size());
        }
    }
    std::string out;
    for (const auto& row : rows) {
        std::string line;
        for (std::size_t i = 0; i < row.size(); ++i) {
            std::string cell = row[i].text;
            if (i + 1 < row.size()) {
                cell.resize(widths[i], ' ');
                cell += "  ";
            }
            if (color && !row[i].color.empty() && !row[i].text.empty()) {
                // Colour the text only, not the padding after it.
                cell = std::string(row[i].color) + row[i].text + std::string(k_reset) +
                       cell.substr(row[i].text.size());
            }
            line += cell;
        }
        while (!line.empty() && line.back() == ' ') {
            line.pop_back();
        }
        out += line + "\n";
    }
    return out;
}

// A TYPE column ("service" or "oneshot") is drawn only when a oneshot job is listed:
// a table of services alone reads as before.
bool any_oneshot(const std::vector<proto::ServiceStatus>& services) {
    return std::ranges::any_of(services, [](const auto& s) { return s.type == "oneshot"; });
}

Row status_row(const proto::ServiceStatus& status, std::string name,
               std::optional<std::string> group, bool with_type = false) {
    Row row{{std::move(name), {}}};
    if (group) {
        row.push_back({*group, {}});
    }
    if (with_type) {
        row.push_back({status.type, {}});
    }
    row.push_back({status.state, state_color(status.state)});
    row.push_back({status.pid ? std::to_string(*status.pid) : "-", {}});
    row.push_back({uptime_text(status.uptime), {}});
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
    return row;
}

bool any_resources(const std::vector<proto::ServiceStatus>& services) {
    return std::ranges::any_of(services, [](const auto& s) { return s.resources.asked; });
}

Row header(bool with_group, bool with_type = false, bool with_resources = false) {
    Row row{{"NAME", {}}};
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
    return row;
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

std::string render_table(const std::vector<proto::ServiceStatus>& services, bool color) {
    bool with_group = false;
    for (const auto& status : services) {
        with_group = with_group || status.group.has_value();
    }
    bool with_type = any_oneshot(services);
    std::vector<Row> rows{header(with_group, with_type, any_resources(services))};
    for (const auto& status : services) {
        std::optional<std::string> group;
        if (with_group) {
            group = status.group.value_or("-");
        }
        rows.push_back(status_row(status, status.name, group, with_type));
    }
    return layout(rows, color);
}

std::string render_tree(const std::vector<proto::ServiceStatus>& services, bool color) {
    bool with_type = any_oneshot(services);
    std::vector<Row> rows{header(false, with_type, any_resources(services))};
    std::vector<std::string> drawn;  // groups already drawn with all their members
    for (const auto& status : services) {
        if (!status.group) {
            rows.push_back(status_row(status, status.name, std::nullopt, with_type));
            continue;
        }
        const auto& group = *status.group;
        if (std::ranges::find(drawn, group) != drawn.end()) {
            continue;
        }
        // A group is drawn where its first member starts, members in start order.
        drawn.push_back(group);
        rows.push_back(Row{{group + "/", {}}});
        for (const auto& member : services) {
            if (member.group == group) {
                rows.push_back(status_row(member, "  " + member.name, std::nullopt, with_type));
            }
        }
    }
    return layout(rows, color);
}

}  // namespace pkit::ctl
