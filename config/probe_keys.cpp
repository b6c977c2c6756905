// [health] and [ready]: one probe each (exec, tcp, http, file; watchdog for health,
// notify for ready), with the keys that only make sense alongside a probe.

#include <algorithm>
#include <array>
#include <limits>

#include "config/load_steps.hpp"
#include "config/probe_targets.hpp"
#include "config/values.hpp"

namespace pkit::config::detail {
namespace {

constexpr std::array<std::string_view, 5> k_probe_keys{"exec", "tcp", "http", "file", "watchdog"};
constexpr std::array<ProbeKind, 5> k_probe_kinds{ProbeKind::exec, ProbeKind::tcp, ProbeKind::http,
                                                 ProbeKind::file, ProbeKind::watchdog};

bool before(Pos a, Pos b) {
    return a.line != b.line ? a.line < b.line : a.column < b.column;
}

// The probe key set in `r`, among the first `kinds` of k_probe_keys; every one after
// the first (in file order) is reported.
std::optional<std::size_t> pick_probe(const TableReader& r, std::size_t kinds) {
    std::vector<std::size_t> present;
    for (std::size_t i = 0; i < kinds; ++i) {
        if (r.get(k_probe_keys[i]) != nullptr) {
            present.push_back(i);
        }
    }
    if (present.empty()) {
        return std::nullopt;
    }
    std::ranges::sort(present, [&](std::size_t a, std::size_t b) {
        return before(r.key_pos(k_probe_keys[a]), r.key_pos(k_probe_keys[b]));
    });
    for (std::size_t i = 1; i < present.size(); ++i) {
        std::string_view key = k_probe_keys[present[i]];
        r.diags().error(r.key_pos(key), cat("[", r.path(), "] takes one probe, and ",
                                            quote(k_probe_keys[present[0]]), " is already set"));
    }
    return present.front();
}

// The target of probe `kind` into `out`; false when it is invalid (reported).
bool read_target(const TableReader& r, std::size_t index, ProbeSpec& out) {
    std::string_view key = k_probe_keys[index];
    const toml::node& node = *r.get(key);
    const Diags& d = r.diags();
    std::string what = r.what(key);
    ProbeKind kind = k_probe_kinds[index];
    bool ok = false;
    if (kind == ProbeKind::exec) {
        ok = r.read(key, out.argv, as_argv);
    } else if (kind == ProbeKind::watchdog) {
        ok = r.read(key, out.watchdog, as_positive_duration);
    } else if (auto text = read_string(d, node, what)) {
        std::optional<std::string> problem;
        // A target with a variable is checked once expanded, at each attempt.
        if (text->find("${") != std::string::npos) {
        } else if (kind == ProbeKind::tcp) {
            problem = check_tcp_target(*text);
        } else if (kind == ProbeKind::http) {
            problem = check_http_target(*text);
        }
        if (problem) {
            d.error(pos_of(node), cat(what, ": ", *problem));
        } else {
            out.target = std::move(*text);
            ok = true;
        }
    }
    if (ok) {
        out.kind = kind;
    }
    return ok;
}

// A key that means nothing in this configuration: an error, so it is not ignored.
void unused(const TableReader& r, std::string_view key, std::string_view why) {
    if (r.get(key) != nullptr) {
        r.diags().error(r.key_pos(key), cat(r.what(key), ": has no effect ", why));
    }
}

// SPEC §20: memory_max (a size, at least 1MiB as [resources] memory_max) and how often
// it is measured; memory_interval alone means nothing.
void parse_memory_limit(const TableReader& r, ProbeSpec& out) {
    if (const toml::node* node = r.get("memory_max")) {
        if (auto bytes = read_size(r.diags(), *node, r.what("memory_max"))) {
            if (*bytes < 1024 * 1024) {
                r.diags().error(pos_of(*node),
                                cat(r.what("memory_max"), ": must be at least 1MiB"));
            } else {
                out.memory_max = *bytes;
            }
        }
    }
    if (r.read("memory_interval", out.memory_interval, as_positive_duration) &&
        out.memory_interval < 100ms) {
        r.diags().error(pos_of(*r.get("memory_interval")),
                        cat(r.what("memory_interval"), ": at least 100ms, got ",
                            format_duration(out.memory_interval)));
    }
    if (r.get("memory_max") == nullptr) {
        unused(r, "memory_interval", "without memory_max");
    }
}

void parse_health(const TableReader& top, ProbeSpec& out) {
    auto r = top.subtable("health", {"exec", "tcp", "http", "file", "watchdog", "interval",
                                     "failures", "timeout", "memory_max", "memory_interval"});
    if (!r) {
        return;
    }
    parse_memory_limit(*r, out);
    auto probe = pick_probe(*r, k_probe_keys.size());
    if (probe) {
        read_target(*r, *probe, out);
    }
    r->read("interval", out.interval, as_positive_duration);
    r->read("failures", out.failures, as_int(1, std::numeric_limits<int>::max()));
    r->read("timeout", out.timeout, as_positive_duration);
    if (!probe) {
        for (std::string_view key : {"interval", "failures", "timeout"}) {
            unused(*r, key, "without a probe (exec, tcp, http, file or watchdog)");
        }
    } else if (k_probe_kinds[*probe] == ProbeKind::watchdog) {
        unused(*r, "interval", "with \"watchdog\", whose duration is the period");
    } else if (r->get("interval") == nullptr) {
        r->diags().error(r->header_pos(),
                         cat("missing key \"interval\" in [health] (required with ",
                             quote(k_probe_keys[*probe]), ")"));
    }
    r->report_unknown();
}

void parse_ready(const TableReader& top, ReadySpec& out) {
    auto r =
        top.subtable("ready", {"notify", "exec", "tcp", "http", "file", "interval", "timeout"});
    if (!r) {
        return;
    }
    r->read("notify", out.notify, as_bool);
    auto probe = pick_probe(*r, k_probe_keys.size() - 1);
    if (probe && out.notify) {
        std::string_view key = k_probe_keys[*probe];
        r->diags().error(r->key_pos(key), cat("[ready] takes notify = true or one probe, not "
                                              "both: ",
                                              quote(key), " is set along with notify"));
    } else if (probe) {
        out.probe.interval = 200ms;
        read_target(*r, *probe, out.probe);
    }
    r->read("interval", out.probe.interval, as_positive_duration);
    r->read("timeout", out.timeout, as_positive_duration);
    if (!probe) {
        unused(*r, "interval", "without a probe (exec, tcp, http or file)");
    }
    if (!probe && !out.notify) {
        unused(*r, "timeout", "without notify = true or a probe");
    }
    r->report_unknown();
}

}  // namespace

void parse_probes(const TableReader& top, ProbeSpec& health, ReadySpec& ready) {
    parse_health(top, health);
    parse_ready(top, ready);
    if (health.kind == ProbeKind::watchdog && !ready.notify) {
        auto section = top.subtable("health", {});
        section->diags().error(pos_of(*section->get("watchdog")),
                               "health.watchdog: needs [ready] notify = true (the watchdog is "
                               "fed over sd_notify)");
    }
}

}  // namespace pkit::config::detail
