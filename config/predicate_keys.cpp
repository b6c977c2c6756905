// [stop_when] and [give_up_when]: exit codes, signals, an output pattern (RE2), OOM
// kills (SPEC §15), memory_max stops (SPEC §20) and, for give_up_when only, launch error names.

#include <array>

#include "config/load_steps.hpp"

namespace pkit::config::detail {
namespace {

// The names SPEC §2 lists, plus the launcher's finer kinds (exec_format, resources,
// other) so every LaunchError can be named; "any" matches all of them.
constexpr std::array<std::string_view, 11> k_launch_error_names{
    "not_found",          "permission_denied", "bad_cwd",   "bad_user",
    "bad_env_file",       "exec_format",       "resources", "other",
    "undefined_variable", "sandbox",           "any"};
constexpr std::array<LaunchError, 10> k_launch_errors{LaunchError::not_found,
                                                      LaunchError::permission_denied,
                                                      LaunchError::bad_cwd,
                                                      LaunchError::bad_user,
                                                      LaunchError::bad_env_file,
                                                      LaunchError::exec_format,
                                                      LaunchError::resources,
                                                      LaunchError::other,
                                                      LaunchError::undefined_variable,
                                                      LaunchError::sandbox};

// A pattern RE2 rejects, or one over 4 KiB, is an error at its value (SPEC §2).
void parse_pattern(const TableReader& r, std::optional<Pattern>& out) {
    const toml::node* node = r.get("output_matches");
    if (node == nullptr) {
        return;
    }
    auto source = read_string(r.diags(), *node, r.what("output_matches"));
    if (!source) {
        return;
    }
    // The reason is "too long (N bytes, at most 4096)" or RE2's own words.
    auto pattern = Pattern::compile(std::move(*source));
    if (pattern) {
        out = std::move(*pattern);
    } else {
        r.diags().error(pos_of(*node), cat(r.what("output_matches"),
                                           ": invalid regular expression: ", pattern.error()));
    }
}

void parse_launch_errors(const TableReader& r, Predicate& out) {
    const toml::node* node = r.get("launch_errors");
    if (node == nullptr) {
        return;
    }
    const toml::array* array = read_array(r.diags(), *node, r.what("launch_errors"));
    if (array == nullptr) {
        return;
    }
    for (const toml::node& element : *array) {
        auto index = read_choice(r.diags(), element, r.what("launch_errors"), k_launch_error_names);
        if (!index) {
            continue;
        }
        if (*index == k_launch_errors.size()) {
            out.any_launch_error = true;
        } else {
            out.launch_errors.push_back(k_launch_errors[*index]);
        }
    }
}

void parse_predicate(const TableReader& top, std::string_view key, bool launch_errors,
                     Predicate& out) {
    std::vector<std::string_view> keys{"exit_codes", "signals", "output_matches", "oom", "memory"};
    if (launch_errors) {
        keys.push_back("launch_errors");
    }
    auto r = top.subtable(key, keys);
    if (!r) {
        return;
    }
    r->read("exit_codes", out.exit_codes,
            [](const Diags& d, const toml::node& n, std::string_view w) {
                return read_each(d, n, w, as_exit_code);
            });
    r->read("signals", out.signals, [](const Diags& d, const toml::node& n, std::string_view w) {
        return read_each(d, n, w, as_signal);
    });
    parse_pattern(*r, out.output_matches);
    r->read("oom", out.oom, as_bool);
    r->read("memory", out.memory, as_bool);
    if (launch_errors) {
        parse_launch_errors(*r, out);
    }
    r->report_unknown();
}

}  // namespace

void parse_predicates(const TableReader& top, Predicate& stop_when, Predicate& give_up_when) {
    parse_predicate(top, "stop_when", false, stop_when);
    parse_predicate(top, "give_up_when", true, give_up_when);
}

}  // namespace pkit::config::detail
