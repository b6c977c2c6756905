// spec_diff(): one walk over a ServiceSpec's keys, row by row, that either compares two
// definitions or lists the keys it knows (spec_diff_keys, for the test that holds it to
// the loader). Values are shown as a service file would write them.

#include "config/spec_diff.hpp"

#include <charconv>
#include <cstdio>

#include "config/capabilities.hpp"
#include "config/values.hpp"

namespace pkit::config {
namespace {

using Text = std::optional<std::string>;

std::string quoted(std::string_view text) {
    std::string out = "\"";
    for (char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
            out += buf;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

std::string strings_text(const std::vector<std::string>& values) {
    std::string out = "[";
    for (const std::string& value : values) {
        out += (out.size() > 1 ? ", " : "") + quoted(value);
    }
    return out + "]";
}

// A duration as the loader reads it back: "1m30s", "200ms", "0"; "0.000001s" below
// a millisecond.
std::string duration_text(Duration d) {
    using namespace std::chrono;
    if (d == Duration::zero()) {
        return "\"0\"";
    }
    if (d % 1ms != Duration::zero()) {
        char buf[48];
        std::snprintf(buf, sizeof buf, "%.9g", duration<double>(d).count());
        return std::string("\"") + buf + "s\"";
    }
    std::string out;
    auto part = [&](Duration unit, const char* name) {
        if (d >= unit) {
            out += std::to_string(d / unit) + name;
            d %= unit;
        }
    };
    part(1h, "h");
    part(1min, "m");
    part(1s, "s");
    part(1ms, "ms");
    return "\"" + out + "\"";
}

std::string number_text(double value) {
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
    return ec == std::errc{} ? std::string(buf, end) : "?";
}

std::string principal_text(const Principal& p) {
    return p.name ? quoted(*p.name) : std::to_string(p.id.value_or(0));
}

std::string signals_text(const std::vector<int>& signals) {
    std::vector<std::string> names;
    for (int signo : signals) {
        names.push_back(signal_name(signo));
    }
    return strings_text(names);
}

std::string ints_text(const std::vector<int>& values) {
    std::string out = "[";
    for (int value : values) {
        out += (out.size() > 1 ? ", " : "") + std::to_string(value);
    }
    return out + "]";
}

std::string exit_codes_text(const ExitCodes& codes) {
    std::vector<int> list;
    for (int code = 0; code < 256; ++code) {
        if (codes.contains(code)) {
            list.push_back(code);
        }
    }
    return ints_text(list);
}

std::string listen_text(const std::vector<ListenSpec>& entries) {
    std::string out = "[";
    for (const ListenSpec& e : entries) {
        std::string entry = std::string(to_string(e.kind)) + " = " + quoted(e.address);
        if (!e.name.empty()) {
            entry += ", name = " + quoted(e.name);
        }
        if (e.backlog != ListenSpec{}.backlog) {
            entry += ", backlog = " + std::to_string(e.backlog);
        }
        if (e.kind == ListenKind::unix_) {
            char mode[8];
            std::snprintf(mode, sizeof mode, "%04o", e.mode);
            entry += std::string(", mode = \"") + mode + "\"";
            if (e.owner.set()) {
                entry += ", owner = " + principal_text(e.owner);
            }
            if (e.group.set()) {
                entry += ", group = " + principal_text(e.group);
            }
        }
        out += (out.size() > 1 ? ", {" : "{") + entry + "}";
    }
    return out + "]";
}

// Cut at k_max_value_text bytes, never inside a UTF-8 sequence.
Text shortened(Text text) {
    if (!text || text->size() <= k_max_value_text) {
        return text;
    }
    std::size_t cut = k_max_value_text - 3;
    while (cut > 0 && (static_cast<unsigned char>((*text)[cut]) & 0xC0) == 0x80) {
        --cut;
    }
    return text->substr(0, cut) + "...";
}

// The walk's sink: compares (out) or lists the keys (keys).
class Rows {
public:
    Rows(std::vector<KeyChange>* out, std::vector<std::pair<std::string, std::string>>* keys)
        : m_out(out), m_keys(keys) {}

    // One key: `render` turns a side's value into its text (nullopt: not set).
    template <class T, class Render>
    void key(std::string_view table, std::string_view name, const T& a, const T& b, Render render) {
        if (m_keys != nullptr) {
            m_keys->emplace_back(std::string(table), std::string(name));
            return;
        }
        if (!(a == b)) {
            std::string dotted =
                table.empty() ? std::string(name) : std::string(table) + "." + std::string(name);
            m_out->push_back(KeyChange{std::move(dotted), shortened(Text(render(a))),
                                       shortened(Text(render(b)))});
        }
    }
    bool listing() const { return m_keys != nullptr; }
    void add(KeyChange change) {
        change.old_value = shortened(std::move(change.old_value));
        change.new_value = shortened(std::move(change.new_value));
        m_out->push_back(std::move(change));
    }

private:
    std::vector<KeyChange>* m_out;
    std::vector<std::pair<std::string, std::string>>* m_keys;
};

// Renderers, by the value's type.
const auto k_bool = [](bool v) -> Text { return v ? "true" : "false"; };
const auto k_int = [](auto v) -> Text { return std::to_string(v); };
const auto k_duration = [](Duration d) -> Text { return duration_text(d); };
const auto k_string = [](const std::string& s) -> Text { return quoted(s); };
const auto k_strings = [](const std::vector<std::string>& v) -> Text { return strings_text(v); };
const auto k_optional_text = [](const Text& t) -> Text { return t; };
const auto k_signal = [](int signo) -> Text { return quoted(signal_name(signo)); };
const auto k_size = [](std::uint64_t bytes) -> Text { return quoted(format_size(bytes)); };
const auto k_number = [](double v) -> Text { return number_text(v); };

template <class T, class Render>
auto optional_of(Render render) {
    return [render](const std::optional<T>& v) -> Text { return v ? render(*v) : std::nullopt; };
}

template <class E>
auto enum_text() {
    return [](E v) -> Text { return quoted(to_string(v)); };
}

// Each entry of a free table (env, rlimits) as a key of its own; the values are texts.
void map_rows(Rows& r, std::string_view table, const std::map<std::string, std::string>& a,
              const std::map<std::string, std::string>& b) {
    if (r.listing()) {
        return;
    }
    std::map<std::string, std::pair<Text, Text>> all;
    for (const auto& [name, value] : a) {
        all[name].first = value;
    }
    for (const auto& [name, value] : b) {
        all[name].second = value;
    }
    for (auto& [name, sides] : all) {
        if (sides.first != sides.second) {
            r.add(KeyChange{std::string(table) + "." + name, sides.first, sides.second});
        }
    }
}

void rlimit_rows(Rows& r, const std::vector<Rlimit>& a, const std::vector<Rlimit>& b) {
    if (r.listing()) {
        return;
    }
    auto text = [](const std::vector<Rlimit>& limits) {
        std::map<std::string, std::string> out;
        for (const Rlimit& limit : limits) {
            out[limit.name] = limit.value ? std::to_string(*limit.value) : "\"unlimited\"";
        }
        return out;
    };
    map_rows(r, "rlimits", text(a), text(b));
}

void process_rows(Rows& r, const ProcessSpec& a, const ProcessSpec& b) {
    r.key("", "cwd", a.cwd, b.cwd, optional_of<std::string>(k_string));
    auto texts = [](const std::map<std::string, std::string>& env) {
        std::map<std::string, std::string> out;
        for (const auto& [name, value] : env) {
            out.emplace(name, quoted(value));
        }
        return out;
    };
    map_rows(r, "env", texts(a.env), texts(b.env));
    r.key("", "clear_env", a.clear_env, b.clear_env, k_bool);
    r.key("", "env_file", a.env_files, b.env_files, k_strings);
    r.key("", "umask", a.umask, b.umask, optional_of<unsigned>([](unsigned mask) -> Text {
              char buf[8];
              std::snprintf(buf, sizeof buf, "\"%03o\"", mask);
              return buf;
          }));
    rlimit_rows(r, a.rlimits, b.rlimits);
    auto principal = [](const Principal& p) -> Text {
        return p.set() ? Text(principal_text(p)) : std::nullopt;
    };
    r.key("", "user", a.user, b.user, principal);
    r.key("", "group", a.group, b.group, principal);
}

void restart_rows(Rows& r, const RestartSpec& a, const RestartSpec& b) {
    r.key("restart", "policy", a.policy, b.policy, enum_text<RestartPolicy>());
    r.key("restart", "max_restarts", a.max_restarts, b.max_restarts, k_int);
    r.key("restart", "within", a.within, b.within, k_duration);
    r.key("restart", "backoff_initial", a.backoff_initial, b.backoff_initial, k_duration);
    r.key("restart", "backoff_factor", a.backoff_factor, b.backoff_factor, k_number);
    r.key("restart", "max_backoff", a.max_backoff, b.max_backoff, k_duration);
    r.key("restart", "jitter", a.jitter, b.jitter, k_bool);
    r.key("restart", "reset_after", a.reset_after, b.reset_after, k_duration);
    r.key("restart", "order", a.order, b.order, enum_text<RestartOrder>());
}

void storm_rows(Rows& r, const StormSpec& a, const StormSpec& b) {
    r.key("storm", "pause", a.pause, b.pause, optional_of<Duration>(k_duration));
    r.key("storm", "threshold", a.threshold, b.threshold, k_number);
    r.key("storm", "decay", a.decay, b.decay, k_duration);
}

void predicate_rows(Rows& r, std::string_view table, const Predicate& a, const Predicate& b,
                    bool launch_errors) {
    r.key(table, "exit_codes", a.exit_codes, b.exit_codes,
          [](const std::vector<int>& v) -> Text { return ints_text(v); });
    r.key(table, "signals", a.signals, b.signals,
          [](const std::vector<int>& v) -> Text { return signals_text(v); });
    r.key(table, "output_matches", a.output_matches, b.output_matches,
          [](const std::optional<Pattern>& p) -> Text {
              return p ? Text(quoted(p->source())) : std::nullopt;
          });
    r.key(table, "oom", a.oom, b.oom, k_bool);
    r.key(table, "memory", a.memory, b.memory, k_bool);
    if (!launch_errors) {
        return;
    }
    auto errors = [](const Predicate& p) -> Text {
        if (p.any_launch_error) {
            return "\"any\"";
        }
        std::vector<std::string> names;
        for (LaunchError e : p.launch_errors) {
            names.emplace_back(to_string(e));
        }
        return strings_text(names);
    };
    r.key(table, "launch_errors", errors(a), errors(b), k_optional_text);
}

// A probe's kind keys (exec, tcp, http, file, and watchdog for [health]): each shows
// the probe's target on the side whose probe is of that kind.
void probe_rows(Rows& r, std::string_view table, const ProbeSpec& a, const ProbeSpec& b,
                bool health) {
    auto side = [](const ProbeSpec& p, ProbeKind kind) -> Text {
        if (p.kind != kind) {
            return std::nullopt;
        }
        if (kind == ProbeKind::exec) {
            return strings_text(p.argv);
        }
        if (kind == ProbeKind::watchdog) {
            return duration_text(p.watchdog);
        }
        return quoted(p.target);
    };
    for (ProbeKind kind :
         {ProbeKind::exec, ProbeKind::tcp, ProbeKind::http, ProbeKind::file, ProbeKind::watchdog}) {
        if (kind == ProbeKind::watchdog && !health) {
            continue;
        }
        r.key(table, to_string(kind), side(a, kind), side(b, kind), k_optional_text);
    }
    if (health) {
        r.key(table, "memory_max", a.memory_max, b.memory_max, optional_of<std::uint64_t>(k_size));
        r.key(table, "memory_interval", a.memory_interval, b.memory_interval, k_duration);
    }
    // The keys that go with a probe, where both sides have one: a probe set or removed
    // is its kind's row, not also the defaults that come and go with it.
    if (!r.listing() && (!a.enabled() || !b.enabled())) {
        return;
    }
    r.key(table, "interval", a.interval, b.interval, k_duration);
    if (health) {
        r.key(table, "failures", a.failures, b.failures, k_int);
        r.key(table, "timeout", a.timeout, b.timeout, k_duration);
    }
}

void resource_rows(Rows& r, const ResourceLimits& a, const ResourceLimits& b) {
    r.key("resources", "memory_max", a.memory_max, b.memory_max,
          optional_of<std::uint64_t>(k_size));
    r.key("resources", "memory_high", a.memory_high, b.memory_high,
          optional_of<std::uint64_t>(k_size));
    r.key("resources", "cpu_max", a.cpu_max, b.cpu_max, optional_of<double>(k_number));
    r.key("resources", "cpu_weight", a.cpu_weight, b.cpu_weight, optional_of<std::int64_t>(k_int));
    r.key("resources", "pids_max", a.pids_max, b.pids_max, optional_of<std::int64_t>(k_int));
    r.key("resources", "io_weight", a.io_weight, b.io_weight, optional_of<std::int64_t>(k_int));
}

void security_rows(Rows& r, const SecuritySpec& a, const SecuritySpec& b) {
    r.key("security", "no_new_privileges", a.no_new_privileges, b.no_new_privileges, k_bool);
    r.key("security", "capabilities", a.capabilities, b.capabilities,
          [](const std::optional<std::uint64_t>& mask) -> Text {
              return mask ? Text(strings_text(capability_names(*mask))) : std::nullopt;
          });
    r.key("security", "private_tmp", a.private_tmp, b.private_tmp, k_bool);
    r.key("security", "protect_system", a.protect_system, b.protect_system,
          [](ProtectSystem mode) -> Text {
              return mode == ProtectSystem::off ? std::nullopt : Text(quoted(to_string(mode)));
          });
    r.key("security", "writable_paths", a.writable_paths, b.writable_paths, k_strings);
    r.key("security", "read_only_paths", a.read_only_paths, b.read_only_paths, k_strings);
    r.key("security", "inaccessible_paths", a.inaccessible_paths, b.inaccessible_paths, k_strings);
    r.key("security", "private_network", a.private_network, b.private_network, k_bool);
}

void walk(Rows& r, const ServiceSpec& a, const ServiceSpec& b) {
    r.key("", "command", a.command, b.command, k_strings);
    process_rows(r, *a.process, *b.process);
    r.key("", "after", a.after, b.after, k_strings);
    r.key("", "success_codes", a.success_codes, b.success_codes,
          [](const ExitCodes& codes) -> Text { return exit_codes_text(codes); });
    r.key("", "timeout", a.timeout, b.timeout, k_duration);
    r.key("", "autostart", a.autostart, b.autostart, k_bool);
    r.key("", "escalate", a.escalate, b.escalate, k_bool);
    r.key("", "type", a.type, b.type, enum_text<ServiceType>());
    r.key("", "affects_readiness", a.affects_readiness, b.affects_readiness, k_bool);
    restart_rows(r, a.restart, b.restart);
    storm_rows(r, *a.storm, *b.storm);
    predicate_rows(r, "stop_when", *a.stop_when, *b.stop_when, false);
    predicate_rows(r, "give_up_when", *a.give_up_when, *b.give_up_when, true);
    probe_rows(r, "health", *a.health, *b.health, true);
    r.key("ready", "notify", a.ready->notify, b.ready->notify, k_bool);
    probe_rows(r, "ready", a.ready->probe, b.ready->probe, false);
    r.key("ready", "timeout", a.ready->timeout, b.ready->timeout, k_duration);
    r.key("stop", "signal", a.stop.signal, b.stop.signal, k_signal);
    r.key("stop", "timeout", a.stop.timeout, b.stop.timeout, k_duration);
    r.key("stop", "mode", a.stop.mode, b.stop.mode, [](StopMode mode) -> Text {
        return mode == StopMode::group ? "\"group\"" : "\"process\"";
    });
    r.key("output", "max_lines", a.output.max_lines, b.output.max_lines, k_int);
    r.key("output", "max_bytes", a.output.max_bytes, b.output.max_bytes,
          [](std::size_t bytes) -> Text { return quoted(format_size(bytes)); });
    r.key("output", "forward", a.output.forward, b.output.forward, enum_text<Forward>());
    const LogFileKeys& log_a = *a.output.log;
    const LogFileKeys& log_b = *b.output.log;
    r.key("output", "file", log_a.path, log_b.path, optional_of<std::string>(k_string));
    r.key("output", "file_max_size", log_a.max_size, log_b.max_size,
          optional_of<std::uint64_t>(k_size));
    r.key("output", "file_keep", log_a.keep, log_b.keep, optional_of<int>(k_int));
    r.key("output", "file_format", log_a.format, log_b.format,
          optional_of<LogFormat>(enum_text<LogFormat>()));
    r.key("", "listen", *a.listen, *b.listen,
          [](const std::vector<ListenSpec>& v) -> Text { return listen_text(v); });
    resource_rows(r, *a.resources, *b.resources);
    security_rows(r, *a.security, *b.security);
    r.key("", "schedule", *a.schedule, *b.schedule, [](const Schedule& s) -> Text {
        return s.enabled() ? Text(quoted(s.expression)) : std::nullopt;
    });
}

}  // namespace

std::vector<KeyChange> spec_diff(const ServiceSpec& before, const ServiceSpec& after) {
    std::vector<KeyChange> out;
    Rows rows(&out, nullptr);
    walk(rows, before, after);
    if (out.empty()) {
        ServiceSpec same = after;
        same.name = before.name;
        same.file = before.file;
        same.instance = before.instance;
        if (!(same == before)) {
            out.push_back(KeyChange{"(definition)", std::nullopt, std::nullopt});
        }
    }
    return out;
}

std::vector<std::pair<std::string, std::string>> spec_diff_keys() {
    std::vector<std::pair<std::string, std::string>> keys;
    Rows rows(nullptr, &keys);
    ServiceSpec spec;
    walk(rows, spec, spec);
    keys.emplace_back("", "env");
    keys.emplace_back("", "rlimits");
    return keys;
}

std::vector<KeyChange> group_diff(const GroupSpec* before, const GroupSpec* after) {
    std::vector<KeyChange> out;
    if (before == nullptr || after == nullptr || before->name != after->name) {
        auto name = [](const GroupSpec* g) -> Text {
            return g != nullptr ? Text(quoted(g->name)) : std::nullopt;
        };
        if (name(before) != name(after)) {
            out.push_back(KeyChange{"group", name(before), name(after)});
        }
        return out;
    }
    Rows r(&out, nullptr);
    const std::string table = "groups." + after->name;
    r.key(table, "strategy", before->strategy, after->strategy, enum_text<Strategy>());
    r.key(table, "members", before->members, after->members, k_strings);
    r.key(table, "max_restarts", before->max_restarts, after->max_restarts, k_int);
    r.key(table, "within", before->within, after->within, k_duration);
    return out;
}

}  // namespace pkit::config
