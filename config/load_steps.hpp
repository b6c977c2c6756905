#pragma once
// Internal to pkitconfig: the steps of load_tree() (loader.cpp) and what they pass
// between them. A file is parsed into a draft, the spec plus the positions that
// checks across files need; validate_tree() then checks the drafts together.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/loader.hpp"
#include "config/toml_reader.hpp"

namespace pkit::config::detail {

// A string of a service file that holds a variable, for --check's warnings.
struct VariableText {
    std::string text;
    Pos pos;
    std::string what;  // "command", "env.PATH", ...
};

struct ServiceDraft {
    ServiceSpec spec;
    Pos after_key;               // the `after` key, where a cycle is reported
    std::vector<Pos> after_pos;  // one per spec.after element
    std::vector<VariableText> variable_texts;
    Pos command_pos;             // argv[0] of `command`, for --check's program warning
    Pos log_file_pos;            // the [output] `file` value, for the log-file checks
    std::int64_t instances = 1;  // the file's `instances`
    // `after` as written, while spec.after holds it expanded for the checks (only when
    // it names a file with instances; see expand_instances()).
    std::optional<std::vector<std::string>> written_after;
    // The file's warnings that every load reports, once the tree is valid (SPEC §21: a
    // start_first service probing its own [[listen]] socket); kept with the parse.
    std::vector<Diagnostic> warnings;
};

struct DaemonDraft {
    DaemonSpec spec;
    std::string file;                          // pkitd.toml as opened
    Pos output_dir_pos;                        // the [output] `dir` value, when written
    std::vector<std::vector<Pos>> member_pos;  // parallel to spec.groups[i].members
    // Each group's members as written, where expand_instances() expanded them.
    std::vector<std::optional<std::vector<std::string>>> written_members;
};

// The service-name pattern [A-Za-z0-9][A-Za-z0-9_.-]{0,63}, also used for groups.
bool valid_name(std::string_view name);

// One file's text as a TOML table, or nullopt after reporting its syntax error at
// its position (loader.cpp).
std::optional<toml::table> parse_text(const Diags& d, std::string_view text);

// A service file's top level (service_keys.cpp); name and file are set by the caller.
ServiceDraft parse_service(const Diags& d, const toml::table& root, const LoadOptions& options);

// `env` (a table of strings) and `env_file` (a string or an array of strings), of a
// service file or of pkitd.toml (service_keys.cpp).
void parse_env(const TableReader& top, std::map<std::string, std::string>& out);
void parse_env_files(const TableReader& top, std::vector<std::string>& out);

// `instances` (SPEC §13): a file with N > 1 defines NAME@1 ... NAME@N (instances.cpp).
inline constexpr std::int64_t k_max_instances = 1000;
// Replaces each draft of a file with instances > 1 by one draft an instance, and, for
// the checks across files, every `after` element and group member naming such a file
// by its instances, in order; adds the instances' names to `known`.
void expand_instances(std::vector<ServiceDraft>& services, DaemonDraft& daemon,
                      std::vector<std::string>& known);
// After the checks: `after` and members as written again. The tree keeps a file's name
// there, and pkitd resolves it to the instances the file has at the time, so that
// `scale` and a reload that changes `instances` change no dependent and no group.
void restore_written_names(std::vector<ServiceDraft>& services, DaemonDraft& daemon);

// The sections of a service file (section_keys.cpp, predicate_keys.cpp, probe_keys.cpp).
void parse_restart(const TableReader& top, RestartSpec& out);
// [storm] of a service file or of pkitd.toml: the same keys, different defaults.
void parse_storm(const TableReader& top, StormSpec& out);
void parse_stop(const TableReader& top, StopSpec& out);
// [output]; `file_pos` gets the position of the `file` value when there is one.
void parse_output(const TableReader& top, OutputSpec& out, Pos& file_pos);
// SPEC §18: the bounds of file_max_size and file_keep, in pkitd.toml as in a service.
inline constexpr std::uint64_t k_min_log_file_size = 64 * 1024;
inline constexpr std::int64_t k_max_log_file_keep = 1000;
// file_max_size, file_keep and file_format of an [output] table (section_keys.cpp).
void read_log_file_keys(const TableReader& r, std::optional<std::uint64_t>& max_size,
                        std::optional<int>& keep, std::optional<LogFormat>& format);
void parse_resources(const TableReader& top, ResourceLimits& out);
// [security] (security_keys.cpp, SPEC §19).
void parse_security(const TableReader& top, SecuritySpec& out);
void parse_predicates(const TableReader& top, Predicate& stop_when, Predicate& give_up_when);
void parse_probes(const TableReader& top, ProbeSpec& health, ReadySpec& ready);
// [[listen]] (listen_keys.cpp): each entry's form; binding is the shell's.
void parse_listen(const TableReader& top, std::vector<ListenSpec>& out);

// `user`/`group` (principal.cpp): a name or an id, refused when pkitd is not root
// and it names anyone else.
void parse_user_group(const TableReader& top, const LoadOptions& options, Principal& user,
                      Principal& group);
std::optional<Principal> read_principal(const Diags& d, const toml::node& n, std::string_view what);

// A start_first service whose [ready] or [health] tcp, http or file probe reaches one
// of its own [[listen]] sockets, which the old run answers during a restart: a
// warning at the probe's key into `out` (self_probe.cpp).
void warn_self_probes(const TableReader& top, const ServiceSpec& spec,
                      std::vector<Diagnostic>& out);

// pkitd.toml (daemon_keys.cpp).
DaemonDraft parse_daemon(const Diags& d, const toml::table& root);

// Variables (variable_keys.cpp): the syntax of every place that expands, reported at
// its value; a service file's texts holding a variable are returned for the warnings.
std::vector<VariableText> check_service_variables(const Diags& d, const toml::table& root);
void check_daemon_variables(const Diags& d, const toml::table& root);
// Warnings (Diagnostic::warning) for the variables of `service` that no source known
// at load defines.
void warn_undefined_variables(const ServiceDraft& service, const DaemonSpec& daemon,
                              std::vector<Diagnostic>& out);

// Checks across files (validate.cpp): `after` targets, group members, a service in
// two groups, dependency cycles. `known` lists every service name with a file,
// including files that failed to parse, so they do not cause follow-up errors.
void validate_tree(const std::vector<ServiceDraft>& services, const DaemonDraft& daemon,
                   const std::vector<std::string>& known, std::vector<Diagnostic>& out);

// Dependency cycles only (cycles.cpp), called by validate_tree().
void report_cycles(const std::vector<ServiceDraft>& services, const DaemonDraft& daemon,
                   std::vector<Diagnostic>& out);

}  // namespace pkit::config::detail
