// [restart], [storm], [stop] and [output] of a service file; [storm] of pkitd.toml.

#include <array>
#include <limits>

#include "config/load_steps.hpp"
#include "config/values.hpp"

namespace pkit::config::detail {
namespace {

constexpr std::array<std::string_view, 3> k_policy_names{"on_crash", "always", "never"};
constexpr std::array<RestartPolicy, 3> k_policies{RestartPolicy::on_crash, RestartPolicy::always,
                                                  RestartPolicy::never};
constexpr std::array<std::string_view, 2> k_order_names{"stop_first", "start_first"};
constexpr std::array<RestartOrder, 2> k_orders{RestartOrder::stop_first, RestartOrder::start_first};
constexpr std::array<std::string_view, 2> k_mode_names{"group", "process"};
constexpr std::array<StopMode, 2> k_modes{StopMode::group, StopMode::process};
constexpr std::array<std::string_view, 3> k_forward_names{"prefix", "raw", "none"};
constexpr std::array<Forward, 3> k_forwards{Forward::prefix, Forward::raw, Forward::none};

constexpr std::int64_t k_int_max = std::numeric_limits<int>::max();

constexpr std::array<std::string_view, 3> k_log_format_names{"text", "json", "raw"};
constexpr std::array<LogFormat, 3> k_log_formats{LogFormat::text, LogFormat::json, LogFormat::raw};

}  // namespace

void read_log_file_keys(const TableReader& r, std::optional<std::uint64_t>& max_size,
                        std::optional<int>& keep, std::optional<LogFormat>& format) {
    if (const toml::node* node = r.get("file_max_size")) {
        if (auto bytes = read_size(r.diags(), *node, r.what("file_max_size"))) {
            if (*bytes < k_min_log_file_size) {
                r.diags().error(pos_of(*node), cat(r.what("file_max_size"),
                                                   ": must be at least 64KiB (a rotation "
                                                   "every few lines would be mostly renames)"));
            } else {
                max_size = *bytes;
            }
        }
    }
    if (const toml::node* node = r.get("file_keep")) {
        if (auto value = read_int(r.diags(), *node, r.what("file_keep"), 0, k_max_log_file_keep)) {
            keep = static_cast<int>(*value);
        }
    }
    r.read("file_format", format, as_enum(k_log_format_names, k_log_formats));
}

void parse_restart(const TableReader& top, RestartSpec& out) {
    auto r = top.subtable("restart",
                          {"policy", "max_restarts", "within", "backoff_initial", "backoff_factor",
                           "max_backoff", "jitter", "reset_after", "order"});
    if (!r) {
        return;
    }
    r->read("policy", out.policy, as_enum(k_policy_names, k_policies));
    r->read("max_restarts", out.max_restarts, as_int(-1, k_int_max));
    r->read("within", out.within, as_duration);
    bool has_initial = r->read("backoff_initial", out.backoff_initial, as_duration);
    r->read("backoff_factor", out.backoff_factor,
            [](const Diags& d, const toml::node& n, std::string_view w) {
                return read_number(d, n, w, 1.0, false);
            });
    bool has_max = r->read("max_backoff", out.max_backoff, as_duration);
    r->read("jitter", out.jitter, as_bool);
    r->read("reset_after", out.reset_after, as_duration);
    r->read("order", out.order, as_enum(k_order_names, k_orders));
    if ((has_initial || has_max) && out.max_backoff < out.backoff_initial) {
        // At whichever of the two was written; max_backoff when both were.
        std::string_view at = has_max ? "max_backoff" : "backoff_initial";
        r->diags().error(pos_of(*r->get(at)),
                         cat("restart.max_backoff (", format_duration(out.max_backoff),
                             ") must not be less than restart.backoff_initial (",
                             format_duration(out.backoff_initial), ")"));
    }
    r->report_unknown();
}

void parse_storm(const TableReader& top, StormSpec& out) {
    auto r = top.subtable("storm", {"pause", "threshold", "decay"});
    if (!r) {
        return;
    }
    // A zero pause would be a guard that trips and does nothing; leaving `pause`
    // out is how the guard is turned off.
    r->read("pause", out.pause, as_positive_duration);
    r->read("threshold", out.threshold,
            [](const Diags& d, const toml::node& n, std::string_view w) {
                return read_number(d, n, w, 0.0, true);
            });
    r->read("decay", out.decay, as_positive_duration);
    r->report_unknown();
}

void parse_stop(const TableReader& top, StopSpec& out) {
    auto r = top.subtable("stop", {"signal", "timeout", "mode"});
    if (!r) {
        return;
    }
    r->read("signal", out.signal, as_signal);
    r->read("timeout", out.timeout, as_duration);
    r->read("mode", out.mode, as_enum(k_mode_names, k_modes));
    r->report_unknown();
}

void parse_resources(const TableReader& top, ResourceLimits& out) {
    auto r = top.subtable("resources", {"memory_max", "memory_high", "cpu_max", "cpu_weight",
                                        "pids_max", "io_weight"});
    if (!r) {
        return;
    }
    constexpr std::uint64_t k_min_memory = 1024 * 1024;
    for (auto [key, slot] :
         {std::pair{"memory_max", &out.memory_max}, std::pair{"memory_high", &out.memory_high}}) {
        const toml::node* node = r->get(key);
        if (node == nullptr) {
            continue;
        }
        if (auto bytes = read_size(r->diags(), *node, r->what(key))) {
            if (*bytes < k_min_memory) {
                r->diags().error(pos_of(*node), cat(r->what(key), ": must be at least 1MiB"));
            } else {
                *slot = *bytes;
            }
        }
    }
    if (const toml::node* node = r->get("cpu_max")) {
        if (auto cores = read_number(r->diags(), *node, r->what("cpu_max"), 0.0, true)) {
            if (*cores > 4096.0) {
                r->diags().error(
                    pos_of(*node),
                    cat(r->what("cpu_max"), ": at most 4096 cores, got ", number_text(*cores)));
            } else {
                out.cpu_max = *cores;
            }
        }
    }
    r->read("cpu_weight", out.cpu_weight, as_int(1, 10000));
    r->read("io_weight", out.io_weight, as_int(1, 10000));
    r->read("pids_max", out.pids_max, as_int(1, std::numeric_limits<int>::max()));
    r->report_unknown();
}

void parse_output(const TableReader& top, OutputSpec& out, Pos& file_pos) {
    auto r = top.subtable("output", {"max_lines", "max_bytes", "forward", "file", "file_max_size",
                                     "file_keep", "file_format"});
    if (!r) {
        return;
    }
    r->read("max_lines", out.max_lines, as_int(1, std::numeric_limits<std::int64_t>::max()));
    if (const toml::node* node = r->get("max_bytes")) {
        if (auto bytes = read_size(r->diags(), *node, r->what("max_bytes"))) {
            if (*bytes == 0) {
                r->diags().error(pos_of(*node), "output.max_bytes: must be at least 1 byte");
            } else {
                out.max_bytes = *bytes;
            }
        }
    }
    r->read("forward", out.forward, as_enum(k_forward_names, k_forwards));
    LogFileKeys log;
    if (const toml::node* node = r->get("file")) {
        // "" is how a service opts out of pkitd.toml's [output] dir.
        if (auto path = read_string(r->diags(), *node, r->what("file"), true)) {
            log.path = std::move(*path);
            file_pos = pos_of(*node);
        }
    }
    read_log_file_keys(*r, log.max_size, log.keep, log.format);
    out.log.set(std::move(log));
    r->report_unknown();
}

}  // namespace pkit::config::detail
