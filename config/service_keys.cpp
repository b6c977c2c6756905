// The top level of a service file: the process keys of SPEC §2, then each section.

#include <sys/resource.h>

#include <array>
#include <limits>

#include "config/load_steps.hpp"

namespace pkit::config::detail {
namespace {

struct RlimitName {
    std::string_view name;
    int resource;
};

constexpr std::array<RlimitName, 8> k_rlimits{{
    {"as", RLIMIT_AS},
    {"core", RLIMIT_CORE},
    {"cpu", RLIMIT_CPU},
    {"fsize", RLIMIT_FSIZE},
    {"memlock", RLIMIT_MEMLOCK},
    {"nofile", RLIMIT_NOFILE},
    {"nproc", RLIMIT_NPROC},
    {"stack", RLIMIT_STACK},
}};

// A string of octal digits: TOML has no leading-zero integers, and a decimal 27
// meaning 027 is exactly the mistake a string avoids.
void parse_umask(const TableReader& top, std::optional<unsigned>& out) {
    const toml::node* node = top.get("umask");
    if (node == nullptr) {
        return;
    }
    const auto* text = node->as_string();
    if (text == nullptr) {
        top.diags().error(pos_of(*node), cat("umask: expected a string of octal digits like "
                                             "\"027\", got ",
                                             type_name(*node)));
        return;
    }
    const std::string& digits = text->get();
    unsigned value = 0;
    bool ok = !digits.empty() && digits.size() <= 4;
    for (char c : digits) {
        ok = ok && c >= '0' && c <= '7';
        value = value * 8 + static_cast<unsigned>(c - '0');
    }
    if (!ok || value > 0777) {
        top.diags().error(pos_of(*node), cat("umask: ", quote(digits),
                                             " is not an octal mode from \"000\" to \"777\""));
        return;
    }
    out = value;
}

void parse_rlimits(const TableReader& top, std::vector<Rlimit>& out) {
    std::vector<std::string_view> names;
    for (const auto& entry : k_rlimits) {
        names.push_back(entry.name);
    }
    auto section = top.subtable("rlimits", names);
    if (!section) {
        return;
    }
    for (const auto& entry : k_rlimits) {
        const toml::node* node = section->get(entry.name);
        if (node == nullptr) {
            continue;
        }
        Rlimit limit{.resource = entry.resource, .name = std::string(entry.name)};
        if (node->is_string() && node->as_string()->get() == "unlimited") {
            out.push_back(std::move(limit));
            continue;
        }
        if (!node->is_integer()) {
            top.diags().error(
                pos_of(*node),
                cat(section->what(entry.name), ": expected an integer or \"unlimited\", got ",
                    node->is_string() ? quote(node->as_string()->get()) : type_name(*node)));
            continue;
        }
        auto value = read_int(top.diags(), *node, section->what(entry.name), 0,
                              std::numeric_limits<std::int64_t>::max());
        if (value) {
            limit.value = static_cast<std::uint64_t>(*value);
            out.push_back(std::move(limit));
        }
    }
    section->report_unknown();
}

void parse_after(const TableReader& top, ServiceDraft& draft) {
    const toml::node* node = top.get("after");
    if (node == nullptr) {
        return;
    }
    draft.after_key = top.key_pos("after");
    const toml::array* array = read_array(top.diags(), *node, "after");
    if (array == nullptr) {
        return;
    }
    for (const toml::node& element : *array) {
        if (auto name = read_string(top.diags(), element, "after")) {
            draft.spec.after.push_back(std::move(*name));
            draft.after_pos.push_back(pos_of(element));
        }
    }
}

ProcessSpec parse_process(const TableReader& top, const LoadOptions& options) {
    ProcessSpec process;
    top.read("cwd", process.cwd, as_string);
    parse_env(top, process.env);
    top.read("clear_env", process.clear_env, as_bool);
    parse_env_files(top, process.env_files);
    parse_umask(top, process.umask);
    parse_rlimits(top, process.rlimits);
    parse_user_group(top, options, process.user, process.group);
    return process;
}

constexpr std::array<std::string_view, 2> k_type_names{"service", "oneshot"};
constexpr std::array<ServiceType, 2> k_types{ServiceType::service, ServiceType::oneshot};

// A oneshot job is ready once it is done, so [ready] would contradict `type`; and
// `always` would run it again after every clean run, so it would never be done and
// its dependents would never start. Both are refused rather than given a meaning.
void check_oneshot(const TableReader& top, const ServiceSpec& spec) {
    if (spec.ready->enabled()) {
        top.diags().error(top.key_pos("type"),
                          "type: a \"oneshot\" job is ready once it ended cleanly (done); remove "
                          "[ready], or use type = \"service\"");
    }
    const toml::node* restart = top.get("restart");
    if (spec.restart.policy == RestartPolicy::always && restart != nullptr && restart->is_table()) {
        const toml::node* policy = restart->as_table()->get("policy");
        top.diags().error(policy != nullptr ? pos_of(*policy) : top.key_pos("type"),
                          "restart.policy: \"always\" would run a \"oneshot\" job again after "
                          "every clean run, so it would never be done; use \"on_crash\" (retry "
                          "until it succeeds) or \"never\"");
    }
    if (spec.restart.order == RestartOrder::start_first) {
        const toml::node* order = restart->as_table()->get("order");
        top.diags().error(pos_of(*order),
                          "restart.order: \"start_first\" overlaps an old run with a new one "
                          "until the new one is ready, and a \"oneshot\" job is never ready "
                          "while it runs; use \"stop_first\"");
    }
}

// `schedule` (SPEC §12): a oneshot job only, since a tick starts an episode that ends
// done or failed. A scheduled job counts toward pkitd's readiness only when its file
// says so: between episodes it is neither running nor done.
void parse_schedule_key(const TableReader& top, ServiceSpec& spec) {
    const toml::node* node = top.get("schedule");
    if (node == nullptr) {
        return;
    }
    auto text = read_string(top.diags(), *node, "schedule");
    if (!text) {
        return;
    }
    auto schedule = parse_schedule(*text);
    if (!schedule) {
        top.diags().error(pos_of(*node), cat("schedule: ", schedule.error()));
        return;
    }
    if (spec.type != ServiceType::oneshot) {
        top.diags().error(top.key_pos("schedule"),
                          "schedule: only a job can be scheduled; add type = \"oneshot\"");
        return;
    }
    if (top.get("affects_readiness") == nullptr) {
        spec.affects_readiness = false;
    }
    spec.schedule.set(std::move(*schedule));
}

}  // namespace

// Variable names as a shell would take them are not enforced (programs read odd
// names too), but "=" cannot be in a name and an empty one cannot be set.
void parse_env(const TableReader& top, std::map<std::string, std::string>& out) {
    auto section = top.subtable("env", {});
    if (!section) {
        return;
    }
    for (const auto& [key, node] : section->table()) {
        std::string name(key.str());
        if (name.empty() || name.find('=') != std::string::npos ||
            name.find('\0') != std::string::npos) {
            top.diags().error(pos_of(key),
                              cat("env: ", quote(name), " is not a valid variable name"));
            continue;
        }
        if (auto value = read_string(top.diags(), node, cat("env.", name), true)) {
            out[name] = std::move(*value);
        }
    }
}

void parse_env_files(const TableReader& top, std::vector<std::string>& out) {
    const toml::node* node = top.get("env_file");
    if (node == nullptr) {
        return;
    }
    if (node->is_string()) {
        if (auto file = read_string(top.diags(), *node, "env_file")) {
            out.push_back(std::move(*file));
        }
        return;
    }
    if (!node->is_array()) {
        top.diags().error(pos_of(*node), cat("env_file: expected a string or an array of "
                                             "strings, got ",
                                             type_name(*node)));
        return;
    }
    top.read("env_file", out, [](const Diags& d, const toml::node& n, std::string_view w) {
        return read_each(d, n, w, as_string);
    });
}

ServiceDraft parse_service(const Diags& d, const toml::table& root, const LoadOptions& options) {
    ServiceDraft draft;
    ServiceSpec& spec = draft.spec;
    TableReader top(
        d, root, "",
        {"command",   "cwd",      "env",       "clear_env", "env_file",      "umask",
         "rlimits",   "user",     "group",     "after",     "success_codes", "timeout",
         "autostart", "escalate", "restart",   "storm",     "stop_when",     "give_up_when",
         "health",    "ready",    "stop",      "output",    "type",          "affects_readiness",
         "instances", "listen",   "resources", "schedule",  "security"},
        Pos{});
    if (top.get("command") == nullptr) {
        d.error(top.header_pos(), "missing required key \"command\"");
    }
    top.read("command", spec.command, as_argv);
    if (const auto* argv = root.get_as<toml::array>("command"); argv != nullptr && !argv->empty()) {
        draft.command_pos = pos_of(*argv->get(0));
    }
    spec.process.set(parse_process(top, options));
    parse_after(top, draft);
    top.read(
        "success_codes", spec.success_codes,
        [](const Diags& d, const toml::node& n, std::string_view w) -> std::optional<ExitCodes> {
            auto codes = read_each(d, n, w, as_exit_code);
            if (!codes) {
                return std::nullopt;
            }
            ExitCodes set;
            for (int code : *codes) {
                set.add(code);
            }
            return set;
        });
    top.read("timeout", spec.timeout, as_duration);
    top.read("autostart", spec.autostart, as_bool);
    top.read("escalate", spec.escalate, as_bool);
    top.read("type", spec.type, as_enum(k_type_names, k_types));
    top.read("affects_readiness", spec.affects_readiness, as_bool);
    top.read("instances", draft.instances, as_int(1, k_max_instances));
    draft.variable_texts = check_service_variables(d, root);

    parse_restart(top, spec.restart);
    // The rarely set sections are read as plain values and kept out of line only when
    // they are not their defaults.
    StormSpec storm;
    parse_storm(top, storm);
    spec.storm.set(std::move(storm));
    Predicate stop_when;
    Predicate give_up_when;
    parse_predicates(top, stop_when, give_up_when);
    spec.stop_when.set(std::move(stop_when));
    spec.give_up_when.set(std::move(give_up_when));
    ProbeSpec health;
    ReadySpec ready;
    parse_probes(top, health, ready);
    spec.health.set(std::move(health));
    spec.ready.set(std::move(ready));
    parse_stop(top, spec.stop);
    parse_output(top, spec.output, draft.log_file_pos);
    std::vector<ListenSpec> listen;
    parse_listen(top, listen);
    spec.listen.set(std::move(listen));
    ResourceLimits resources;
    parse_resources(top, resources);
    spec.resources.set(std::move(resources));
    SecuritySpec security;
    parse_security(top, security);
    spec.security.set(std::move(security));
    if (spec.type == ServiceType::oneshot) {
        check_oneshot(top, spec);
    }
    parse_schedule_key(top, spec);
    warn_self_probes(top, spec, draft.warnings);
    top.report_unknown();
    return draft;
}

}  // namespace pkit::config::detail
