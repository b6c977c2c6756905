#include "ctl/top_view.hpp"

#include <algorithm>
#include <cstdio>

#include "ctl/render.hpp"
#include "ctl/status_filter.hpp"

namespace pkit::ctl {
namespace {

// A row's figures for the frame.
struct TopRow {
    const proto::ServiceStatus* status;
    std::optional<double> cpu_percent;
    std::int64_t memory = 0;
};

std::string percent_text(std::optional<double> percent) {
    if (!percent) {
        return "-";
    }
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", *percent);
    return text;
}

std::string_view sort_name(TopSort sort) {
    switch (sort) {
        case TopSort::cpu:
            return "CPU";
        case TopSort::memory:
            return "memory";
        case TopSort::restarts:
            return "restarts";
        case TopSort::name:
            return "name";
    }
    return "CPU";
}

// `cells` padded to `widths`, two blanks apart; the name column (first) left-aligned,
// the figures after STATE right-aligned.
std::string line_of(const std::vector<std::string>& cells, const std::vector<std::size_t>& widths) {
    std::string line;
    for (std::size_t i = 0; i < cells.size(); ++i) {
        const std::size_t pad = widths[i] - std::min(widths[i], columns_of(cells[i]));
        const bool right = i >= 2 && i <= 6;  // PID UPTIME RESTARTS CPU% MEM
        if (right) {
            line.append(pad, ' ');
        }
        line += cells[i];
        if (!right && i + 1 < cells.size()) {
            line.append(pad, ' ');
        }
        if (i + 1 < cells.size()) {
            line += "  ";
        }
    }
    while (!line.empty() && line.back() == ' ') {
        line.pop_back();
    }
    return line;
}

}  // namespace

std::optional<TopSort> sort_for_key(char key) {
    switch (key) {
        case 'c':
        case 'P':  // top(1)'s keys too
            return TopSort::cpu;
        case 'm':
        case 'M':
            return TopSort::memory;
        case 'r':
            return TopSort::restarts;
        case 'n':
        case 'N':
            return TopSort::name;
        default:
            return std::nullopt;
    }
}

CpuSample cpu_sample(const std::vector<proto::ServiceStatus>& rows, double at) {
    CpuSample sample{.at = at};
    for (const auto& row : rows) {
        if (row.resources.value) {
            sample.seconds[row.name] = row.resources.value->cpu_seconds;
        }
    }
    return sample;
}

std::vector<std::string> top_frame(const std::vector<proto::ServiceStatus>& rows,
                                   const CpuSample& now, const CpuSample* before, TopSort sort,
                                   std::size_t width, std::size_t height) {
    std::vector<TopRow> shown;
    shown.reserve(rows.size());
    for (const auto& row : rows) {
        TopRow top{.status = &row};
        if (const auto& used = row.resources.value) {
            top.memory = used->rss_bytes;
            auto then = before != nullptr ? before->seconds.find(row.name) : now.seconds.end();
            const double elapsed = before != nullptr ? now.at - before->at : 0;
            if (before != nullptr && then != before->seconds.end() && elapsed > 0 &&
                used->cpu_seconds >= then->second) {
                top.cpu_percent = 100.0 * (used->cpu_seconds - then->second) / elapsed;
            } else if (row.uptime && *row.uptime > 0) {
                top.cpu_percent = 100.0 * used->cpu_seconds / *row.uptime;
            }
        }
        shown.push_back(top);
    }
    std::ranges::stable_sort(shown, [sort](const TopRow& a, const TopRow& b) {
        switch (sort) {
            case TopSort::cpu:
                return a.cpu_percent.value_or(-1) > b.cpu_percent.value_or(-1);
            case TopSort::memory:
                return a.memory > b.memory;
            case TopSort::restarts:
                return a.status->restarts > b.status->restarts;
            case TopSort::name:
                return a.status->name < b.status->name;
        }
        return false;
    });

    std::vector<std::vector<std::string>> cells;
    cells.push_back({"NAME", "STATE", "PID", "UPTIME", "RESTARTS", "CPU%", "MEM", "HEALTH"});
    const std::size_t room = height == 0 ? shown.size() : (height > 2 ? height - 2 : 0);
    for (std::size_t i = 0; i < shown.size() && i < room; ++i) {
        const auto& s = *shown[i].status;
        cells.push_back({s.name, s.state, s.pid ? std::to_string(*s.pid) : "-",
                         uptime_text(s.uptime), std::to_string(s.restarts),
                         percent_text(shown[i].cpu_percent),
                         s.resources.value ? memory_text(shown[i].memory) : "-", health_text(s)});
    }
    std::vector<std::size_t> widths(cells.front().size(), 0);
    for (const auto& row : cells) {
        for (std::size_t i = 0; i < row.size(); ++i) {
            widths[i] = std::max(widths[i], columns_of(row[i]));
        }
    }
    // Names give way first when the screen is narrow (as in `status`).
    if (auto names = narrowed_names(widths, width)) {
        widths[0] = *names;
        for (auto& row : cells) {
            row[0] = fit_columns(row[0], widths[0]);
        }
    }

    std::vector<std::string> frame;
    frame.push_back(summary_line(name_states(rows)) + " \u2014 sorted by " +
                    std::string(sort_name(sort)) + " (c m r n sort, q quits)");
    for (const auto& row : cells) {
        frame.push_back(line_of(row, widths));
    }
    if (width > 0) {
        for (auto& line : frame) {
            line = fit_columns(line, width);
        }
    }
    return frame;
}

std::string frame_diff(const std::vector<std::string>& before,
                       const std::vector<std::string>& after, bool full) {
    std::string out;
    if (full) {
        out += "\033[H\033[2J";
    }
    auto move_to = [&out](std::size_t line) { out += "\033[" + std::to_string(line + 1) + ";1H"; };
    for (std::size_t i = 0; i < after.size(); ++i) {
        if (!full && i < before.size() && before[i] == after[i]) {
            continue;
        }
        move_to(i);
        out += after[i];
        out += "\033[K";
    }
    if (!full) {
        for (std::size_t i = after.size(); i < before.size(); ++i) {
            move_to(i);
            out += "\033[K";
        }
    }
    return out;
}

}  // namespace pkit::ctl
