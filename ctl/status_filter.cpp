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

std::vector<std::string> split_states(const std::vector<std::string>& options) {
    std::vector<std::string> states;
    for (const auto& option : options) {
        std::size_t at = 0;
        while (at <= option.size()) {
            std::size_t comma = std::min(option.find(',', at), option.size());
            std::string word = option.substr(at, comma - at);
            const bool well_formed = !word.empty() && std::ranges::all_of(word, [](char c) {
                return (c >= 'a' && c <= 'z') || c == '_';
            });
            if (!well_formed) {
                throw usage_error("--state: \"" + option +
                                  "\" is not a list of states (such as running,backoff)");
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

std::vector<std::string> state_typos(const std::vector<NameState>& rows,
                                     const std::vector<std::string>& states) {
    std::vector<std::string> seen;
    for (const auto& row : rows) {
        if (std::ranges::find(seen, row.state) == seen.end()) {
            seen.emplace_back(row.state);
        }
    }
    std::vector<std::string> notes;
    for (const auto& state : states) {
        if (std::ranges::find(seen, state) != seen.end()) {
            continue;
        }
        if (auto suggestion = config::detail::did_you_mean(state, seen); !suggestion.empty()) {
            notes.push_back("no service is \"" + state + "\"" + suggestion);
        }
    }
    return notes;
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
