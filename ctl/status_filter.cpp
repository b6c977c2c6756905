#include "ctl/status_filter.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <map>

#include "config/suggest.hpp"
#include "ctl/global_options.hpp"

namespace pkit::ctl {

bool is_pattern(std::string_view name) {
    return name.find_first_of("*?[") != std::string_view::npos;
}

const std::vector<std::string>& service_states() {
    static const std::vector<std::string> states{"waiting", "starting",    "running", "stopping",
                                                 "backoff", "storm_pause", "stopped", "done",
                                                 "failed",  "scheduled",   "paused"};
    return states;
}

std::vector<std::string> split_states(const std::vector<std::string>& options) {
    std::vector<std::string> states;
    for (const auto& option : options) {
        std::size_t at = 0;
        while (at <= option.size()) {
            std::size_t comma = std::min(option.find(',', at), option.size());
            std::string word = option.substr(at, comma - at);
            if (std::ranges::find(service_states(), word) == service_states().end()) {
                std::string valid;
                for (const auto& state : service_states()) {
                    valid += (valid.empty() ? "" : ", ") + state;
                }
                const std::string what = word.empty() ? "an empty state in \"" + option + "\""
                                                      : "unknown state \"" + word + "\"";
                throw usage_error("--state: " + what +
                                  config::detail::did_you_mean(word, service_states()) +
                                  " (states: " + valid + ")");
            }
            if (std::ranges::find(states, word) == states.end()) {
                states.push_back(std::move(word));
            }
            at = comma + 1;
        }
    }
    return states;
}

std::vector<NameState> name_states(const std::vector<proto::ServiceStatus>& rows) {
    std::vector<NameState> view;
    view.reserve(rows.size());
    for (const auto& row : rows) {
        view.push_back({row.name, row.state});
    }
    return view;
}

std::vector<std::size_t> select_rows(const std::vector<NameState>& rows,
                                     const std::vector<std::string>& names,
                                     const std::vector<std::string>& states) {
    std::vector<bool> chosen(rows.size(), names.empty());
    for (const auto& name : names) {
        bool found = false;
        for (std::size_t i = 0; i < rows.size(); ++i) {
            const bool match =
                is_pattern(name)
                    ? ::fnmatch(name.c_str(), std::string(rows[i].name).c_str(), 0) == 0
                    : rows[i].name == name;
            if (match) {
                chosen[i] = true;
                found = true;
            }
        }
        if (found) {
            continue;
        }
        if (is_pattern(name)) {
            throw CtlError(k_exit_daemon_error,
                           "unknown_service: no service matches \"" + name + "\"");
        }
        std::vector<std::string> known;
        known.reserve(rows.size());
        for (const auto& row : rows) {
            known.emplace_back(row.name);
        }
        throw CtlError(k_exit_daemon_error, "unknown_service: unknown service \"" + name + "\"" +
                                                config::detail::did_you_mean(name, known));
    }
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        if (chosen[i] &&
            (states.empty() || std::ranges::find(states, rows[i].state) != states.end())) {
            out.push_back(i);
        }
    }
    return out;
}

std::vector<std::string> expand_patterns(const std::vector<NameState>& rows,
                                         const std::vector<std::string>& names) {
    std::vector<std::string> out;
    auto add = [&out](std::string_view name) {
        if (std::ranges::find(out, name) == out.end()) {
            out.emplace_back(name);
        }
    };
    for (const auto& name : names) {
        if (!is_pattern(name)) {
            add(name);
            continue;
        }
        for (std::size_t i : select_rows(rows, {name}, {})) {
            add(rows[i].name);
        }
    }
    return out;
}

std::string summary_line(const std::vector<NameState>& rows) {
    std::map<std::string_view, std::size_t> counts;
    for (const auto& row : rows) {
        ++counts[row.state];
    }
    std::vector<std::pair<std::string_view, std::size_t>> order(counts.begin(), counts.end());
    std::ranges::stable_sort(order,
                             [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string line = std::to_string(rows.size()) + (rows.size() == 1 ? " service" : " services");
    for (std::size_t i = 0; i < order.size(); ++i) {
        line += (i == 0 ? ": " : ", ") + std::to_string(order[i].second) + " " +
                std::string(order[i].first);
    }
    return line;
}

std::optional<std::size_t> narrowed_names(const std::vector<std::size_t>& widths,
                                          std::size_t width) {
    constexpr std::size_t k_narrowest_name = 12;
    if (width == 0 || widths.empty() || widths[0] <= k_narrowest_name) {
        return std::nullopt;
    }
    std::size_t table = 0;
    for (std::size_t w : widths) {
        table += w + 2;
    }
    table -= 2;  // no blanks after the last column
    if (table <= width) {
        return std::nullopt;
    }
    const std::size_t over = table - width;
    return std::max(k_narrowest_name, widths[0] > over ? widths[0] - over : 0);
}

std::size_t columns_of(std::string_view text) {
    return static_cast<std::size_t>(std::ranges::count_if(
        text, [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string fit_columns(std::string_view text, std::size_t columns) {
    if (columns_of(text) <= columns) {
        return std::string(text);
    }
    if (columns == 0) {
        return "";
    }
    // Keep columns - 1 code points, then the ellipsis.
    std::size_t kept = 0;
    std::size_t at = 0;
    while (at < text.size()) {
        if ((static_cast<unsigned char>(text[at]) & 0xC0) != 0x80) {
            if (kept == columns - 1) {
                break;
            }
            ++kept;
        }
        ++at;
    }
    return std::string(text.substr(0, at)) + "\u2026";
}

}  // namespace pkit::ctl
