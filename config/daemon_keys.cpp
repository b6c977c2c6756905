// pkitd.toml (SPEC §6, §9): the socket, who may use it, the shutdown deadline, the
// daemon-wide storm guard, the root's restart intensity, the groups and cgroups (§15).

#include <array>
#include <limits>

#include "config/load_steps.hpp"
#include "config/probe_targets.hpp"

namespace pkit::config::detail {
namespace {

constexpr std::array<std::string_view, 3> k_strategy_names{"one_for_one", "one_for_all",
                                                           "rest_for_one"};
constexpr std::array<Strategy, 3> k_strategies{Strategy::one_for_one, Strategy::one_for_all,
                                               Strategy::rest_for_one};

constexpr std::array<std::string_view, 3> k_cgroup_mode_names{"auto", "off", "required"};
constexpr std::array<CgroupMode, 3> k_cgroup_modes{CgroupMode::automatic, CgroupMode::off,
                                                   CgroupMode::required};

constexpr std::int64_t k_int_max = std::numeric_limits<int>::max();

constexpr auto as_principal = [](const Diags& d, const toml::node& n, std::string_view w) {
    return read_principal(d, n, w);
};

void parse_root(const TableReader& top, RootSpec& out) {
    auto r = top.subtable("root", {"max_restarts", "within"});
    if (!r) {
        return;
    }
    r->read("max_restarts", out.max_restarts, as_int(0, k_int_max));
    r->read("within", out.within, as_duration);
    r->report_unknown();
}

// One [groups.NAME]; members and their positions go to `group` and `positions`.
void parse_group(const TableReader& groups, std::string_view name, GroupSpec& group,
                 std::vector<Pos>& positions) {
    auto r = groups.subtable(name, {"strategy", "members", "max_restarts", "within"});
    if (!r) {
        return;
    }
    r->read("strategy", group.strategy, as_enum(k_strategy_names, k_strategies));
    r->read("max_restarts", group.max_restarts, as_int(-1, k_int_max));
    r->read("within", group.within, as_duration);
    const toml::node* members = r->get("members");
    if (members == nullptr) {
        r->diags().error(r->header_pos(), cat("missing key \"members\" in [", r->path(), "]"));
    } else if (const toml::array* array = read_array(r->diags(), *members, r->what("members"))) {
        if (array->empty()) {
            r->diags().error(pos_of(*members), cat(r->what("members"), ": must not be empty"));
        }
        for (const toml::node& element : *array) {
            if (auto member = read_string(r->diags(), element, r->what("members"))) {
                group.members.push_back(std::move(*member));
                positions.push_back(pos_of(element));
            }
        }
    }
    r->report_unknown();
}

// [http] listen = "host:port" (SPEC §11); the name is resolved when pkitd binds it.
void parse_http(const TableReader& top, HttpSpec& out) {
    auto r = top.subtable("http", {"listen"});
    if (!r) {
        return;
    }
    const toml::node* node = r->get("listen");
    if (node == nullptr) {
        r->diags().error(r->header_pos(), "missing key \"listen\" in [http]");
    } else if (auto text = read_string(r->diags(), *node, r->what("listen"))) {
        if (auto problem = check_tcp_target(*text)) {
            r->diags().error(pos_of(*node), cat(r->what("listen"), ": ", *problem));
        } else {
            out.listen = std::move(*text);
        }
    }
    r->report_unknown();
}

void parse_groups(const TableReader& top, DaemonDraft& draft) {
    auto groups = top.subtable("groups", {});
    if (!groups) {
        return;
    }
    // toml++ keeps a table's keys sorted, so this is name order.
    for (const auto& [key, node] : groups->table()) {
        std::string name(key.str());
        if (!valid_name(name)) {
            top.diags().error(entry_pos(key, node),
                              cat("groups: ", quote(name),
                                  " is not a valid group name (1 to 64 letters, digits, \"_\", "
                                  "\".\" or \"-\", starting with a letter or digit)"));
            continue;
        }
        GroupSpec group{.name = name};
        std::vector<Pos> positions;
        parse_group(*groups, name, group, positions);
        draft.spec.groups.push_back(std::move(group));
        draft.member_pos.push_back(std::move(positions));
    }
}

// [output] (SPEC §18): the log directory and the services' log-file defaults.
void parse_daemon_output(const TableReader& top, DaemonDraft& draft) {
    auto r = top.subtable("output", {"dir", "file_max_size", "file_keep", "file_format"});
    if (!r) {
        return;
    }
    DaemonOutputSpec& out = draft.spec.output;
    if (const toml::node* node = r->get("dir")) {
        if (auto dir = read_string(r->diags(), *node, r->what("dir"), true)) {
            if (!dir->empty()) {  // "": no directory, as when left out
                out.dir = std::move(*dir);
            }
            draft.output_dir_pos = pos_of(*node);
        }
    }
    std::optional<std::uint64_t> max_size;
    std::optional<int> keep;
    std::optional<LogFormat> format;
    read_log_file_keys(*r, max_size, keep, format);
    out.file_max_size = max_size.value_or(out.file_max_size);
    out.file_keep = keep.value_or(out.file_keep);
    out.file_format = format.value_or(out.file_format);
    r->report_unknown();
}

constexpr std::array<std::string_view, 2> k_exit_when_names{"never", "all_done"};
constexpr std::array<ExitWhen, 2> k_exit_when{ExitWhen::never, ExitWhen::all_done};

}  // namespace

DaemonDraft parse_daemon(const Diags& d, const toml::table& root) {
    DaemonDraft draft;
    draft.file = d.file();
    DaemonSpec& spec = draft.spec;
    TableReader top(d, root, "",
                    {"socket", "control_users", "control_group", "shutdown_timeout", "storm",
                     "root", "groups", "http", "env", "env_file", "cgroups", "exit_when", "output"},
                    Pos{});
    top.read("socket", spec.socket, as_string);
    top.read("control_users", spec.control_users,
             [](const Diags& d, const toml::node& n, std::string_view w) {
                 return read_each(d, n, w, as_principal);
             });
    top.read("control_group", spec.control_group, as_principal);
    top.read("shutdown_timeout", spec.shutdown_timeout, as_duration);
    parse_storm(top, spec.storm);
    parse_root(top, spec.root);
    parse_groups(top, draft);
    parse_http(top, spec.http);
    parse_env(top, spec.env);
    parse_env_files(top, spec.env_files);
    check_daemon_variables(d, root);
    top.read("cgroups", spec.cgroups, as_enum(k_cgroup_mode_names, k_cgroup_modes));
    top.read("exit_when", spec.exit_when, as_enum(k_exit_when_names, k_exit_when));
    parse_daemon_output(top, draft);
    top.report_unknown();
    return draft;
}

}  // namespace pkit::config::detail
