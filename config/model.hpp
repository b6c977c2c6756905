#pragma once
// The service model: every key of SPEC §2 and pkitd.toml (§6, §9) as plain values.
// Defaults here are the contract's defaults. Nothing in this header does I/O; the
// loader (loader.hpp) fills these from TOML and validates them.
//
// Every struct is comparable with ==, because reload (SPEC §8) decides "changed" by
// comparing parsed definitions: a change to comments or formatting is no change.

#include <bitset>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/out_of_line.hpp"
#include "config/pattern.hpp"
#include "config/schedule.hpp"

namespace pkit::config {

using Duration = std::chrono::nanoseconds;

using namespace std::chrono_literals;

enum class RestartPolicy { on_crash, always, never };

// SPEC §2 `type`: a long-running service, or a job expected to end (ready once done).
enum class ServiceType { service, oneshot };

// The launch failures pkitd can tell apart (SPEC §2 give_up_when.launch_errors).
enum class LaunchError {
    not_found,           // ENOENT / ENOTDIR on exec
    permission_denied,   // EACCES / EPERM on exec
    bad_cwd,             // chdir failed
    bad_user,            // unknown user or group, or setuid/setgid/initgroups failed
    bad_env_file,        // an env_file is missing or unreadable
    exec_format,         // ENOEXEC: not an executable format
    resources,           // fork, pipe or rlimit failure (EAGAIN, ENOMEM, EMFILE ...)
    other,               // anything else exec reported
    undefined_variable,  // a ${VAR} with no value and no default (SPEC §13)
    sandbox,             // a [security] protection that could not be applied (SPEC §19)
};

// SPEC §14 `[restart] order`: how an operator restart, a reload or a rolling restart
// replaces a run: stop it, then start the new one; or start the new one and stop the
// old once the new one is ready.
enum class RestartOrder { stop_first, start_first };

struct RestartSpec {
    RestartPolicy policy = RestartPolicy::on_crash;
    int max_restarts = -1;  // -1 unlimited
    Duration within = 0s;   // 0: over the whole life
    Duration backoff_initial = 200ms;
    double backoff_factor = 2.0;
    Duration max_backoff = 30s;
    bool jitter = true;
    Duration reset_after = 60s;
    RestartOrder order = RestartOrder::stop_first;
    bool operator==(const RestartSpec&) const = default;
};

// The failure-storm guard; off unless `pause` is set.
struct StormSpec {
    std::optional<Duration> pause;
    double threshold = 5.0;
    Duration decay = 60s;  // half-life
    bool enabled() const { return pause.has_value(); }
    bool operator==(const StormSpec&) const = default;
};

// [stop_when] and [give_up_when]. Empty means "never matches".
struct Predicate {
    std::vector<int> exit_codes;
    std::vector<int> signals;
    std::optional<Pattern> output_matches;   // searched in each line of the run's output
    std::vector<LaunchError> launch_errors;  // give_up_when only
    bool any_launch_error = false;           // give_up_when only: "any"
    bool oom = false;                        // a run the kernel's OOM killer killed in (SPEC §15)
    bool memory = false;                     // a run stopped over [health] memory_max (SPEC §20)
    bool empty() const {
        return exit_codes.empty() && signals.empty() && !output_matches && launch_errors.empty() &&
               !any_launch_error && !oom && !memory;
    }
    bool operator==(const Predicate&) const = default;
};

enum class ProbeKind { none, exec, tcp, http, file, watchdog };

// One probe: [health] (any kind, watchdog included) or [ready] (exec/tcp/http/file).
struct ProbeSpec {
    ProbeKind kind = ProbeKind::none;
    std::vector<std::string> argv;  // exec
    std::string target;             // tcp "host:port", http URL, file path
    Duration watchdog = 0s;         // watchdog period
    Duration interval = 0s;         // [health]: required for exec/tcp/http/file
    int failures = 3;
    Duration timeout = 1s;  // per probe attempt
    // [health] only (SPEC §20): the run's memory measured every memory_interval, stopped
    // after two measurements in a row over memory_max (bytes). No probe: enabled() is
    // about `kind` alone.
    std::optional<std::uint64_t> memory_max;
    Duration memory_interval = 5s;
    bool enabled() const { return kind != ProbeKind::none; }
    bool operator==(const ProbeSpec&) const = default;
};

struct ReadySpec {
    bool notify = false;
    ProbeSpec probe;  // kind none unless a probe key is set; probe.interval defaults 200ms
    Duration timeout = 30s;
    bool enabled() const { return notify || probe.enabled(); }
    bool operator==(const ReadySpec&) const = default;
};

enum class StopMode { group, process };

struct StopSpec {
    int signal = SIGTERM;
    Duration timeout = 5s;
    StopMode mode = StopMode::group;
    bool operator==(const StopSpec&) const = default;
};

enum class Forward { prefix, raw, none };

// SPEC §18 `file_format`: how each line is written to a log file.
enum class LogFormat { text, json, raw };

// SPEC §18: the log-file keys of a service's [output], as written. A key left out takes
// pkitd.toml's [output] value when the tree is resolved (log_file.hpp), so each is
// optional here: a service file means the same whatever pkitd.toml says.
struct LogFileKeys {
    // nullopt: not written (pkitd.toml's [output] dir decides); "": no log file;
    // otherwise the path as written, `${VAR}` unexpanded, maybe relative.
    std::optional<std::string> path;
    std::optional<std::uint64_t> max_size;  // `file_max_size`, at least 64 KiB
    std::optional<int> keep;                // `file_keep`, 0-1000
    std::optional<LogFormat> format;        // `file_format`
    bool operator==(const LogFileKeys&) const = default;
};

struct OutputSpec {
    std::size_t max_lines = 1000;
    std::size_t max_bytes = 256 * 1024;
    Forward forward = Forward::prefix;
    OutOfLine<LogFileKeys> log;  // SPEC §18: file, file_max_size, file_keep, file_format
    bool operator==(const OutputSpec&) const = default;
};

struct Rlimit {
    int resource = 0;                    // RLIMIT_* constant
    std::string name;                    // "nofile", ...
    std::optional<std::uint64_t> value;  // nullopt = unlimited
    bool operator==(const Rlimit&) const = default;
};

// A set of exit codes (0-255), as success_codes takes them. A bitset, inline: the
// default {0} that nearly every service keeps costs no allocation, as a vector's would.
// The order and repeats of the file's list mean nothing and are not kept.
class ExitCodes {
public:
    ExitCodes() = default;
    ExitCodes(std::initializer_list<int> codes) {
        for (int code : codes) {
            add(code);
        }
    }
    // A code outside 0-255 is no exit code and is ignored (the loader reports it).
    void add(int code) {
        if (code >= 0 && static_cast<std::size_t>(code) < m_codes.size()) {
            m_codes.set(static_cast<std::size_t>(code));
        }
    }
    bool contains(int code) const {
        return code >= 0 && static_cast<std::size_t>(code) < m_codes.size() &&
               m_codes.test(static_cast<std::size_t>(code));
    }
    bool operator==(const ExitCodes&) const = default;

private:
    std::bitset<256> m_codes;
};

// A user or group as written: a name or a numeric id. Resolved by the launcher.
struct Principal {
    std::optional<std::string> name;
    std::optional<std::uint32_t> id;
    bool set() const { return name || id; }
    bool operator==(const Principal&) const = default;
};

// The keys that set up the process before exec (SPEC §2): the launcher's business
// only, and set by few services, so ServiceSpec holds them out of line.
struct ProcessSpec {
    std::optional<std::string> cwd;
    std::map<std::string, std::string> env;
    bool clear_env = false;
    std::vector<std::string> env_files;
    std::optional<unsigned> umask;
    std::vector<Rlimit> rlimits;
    Principal user;
    Principal group;
    bool operator==(const ProcessSpec&) const = default;
};

enum class ListenKind { tcp, udp, unix_ };

// One [[listen]] entry (SPEC §14): a socket pkitd binds when it loads the service and
// hands to each run as fd 3 + its index. The loader checks the form; binding (and its
// errors: in use, no permission, a missing directory) is the shell's.
struct ListenSpec {
    ListenKind kind = ListenKind::tcp;
    std::string address;  // as written: "127.0.0.1:8080", "[::]:80", or the Unix path
    std::string host;     // tcp, udp: a numeric IPv4 or IPv6 address, without brackets
    std::uint16_t port = 0;
    std::string name;  // its LISTEN_FDNAMES entry; empty: the service's name (without @I)
    int backlog = 4096;
    unsigned mode = 0660;  // unix: the socket file's permissions
    Principal owner;       // unix: its owner and group (unset: pkitd's)
    Principal group;
    // Where the entry is written (its `[[` or inline table), for binding errors. Not
    // part of the value: moving an entry in its file changes nothing.
    int line = 1;
    int column = 1;
    // The socket itself (kind and address): an entry that keeps it keeps its socket
    // across a reload, whatever else changes.
    bool same_socket(const ListenSpec& o) const { return kind == o.kind && address == o.address; }
    bool operator==(const ListenSpec& o) const {
        return same_socket(o) && host == o.host && port == o.port && name == o.name &&
               backlog == o.backlog && mode == o.mode && owner == o.owner && group == o.group;
    }
};

// SPEC §19 `protect_system`: nothing, /usr /boot /etc read-only, or everything but the
// API file systems, /run, the private /tmp and writable_paths.
enum class ProtectSystem { off, full, strict };

// SPEC §19 [security]: what a run may not do, applied in the child before execve. Each
// key off by default; a spec whose any() is false gets no namespace at all.
struct SecuritySpec {
    bool no_new_privileges = false;
    // The bounding set as a mask of capability numbers (bit N: CAP number N; see
    // capabilities.hpp); nullopt: the key is absent and the set is left alone.
    std::optional<std::uint64_t> capabilities;
    bool private_tmp = false;
    ProtectSystem protect_system = ProtectSystem::off;
    // Absolute paths, normalised (no trailing "/", no "." or ".." component).
    std::vector<std::string> writable_paths;
    std::vector<std::string> read_only_paths;
    std::vector<std::string> inaccessible_paths;
    bool private_network = false;
    // Where each key set is written ("[security]" key, line, column), for --check's
    // warnings. Not part of the value: moving a key in its file changes nothing.
    struct KeyAt {
        std::string key;
        int line = 1;
        int column = 1;
    };
    std::vector<KeyAt> at;

    // Whether the run needs a mount namespace (any key but the three below).
    bool mounts() const {
        return private_tmp || protect_system != ProtectSystem::off || !writable_paths.empty() ||
               !read_only_paths.empty() || !inaccessible_paths.empty();
    }
    bool any() const {
        return no_new_privileges || capabilities.has_value() || private_network || mounts();
    }
    bool operator==(const SecuritySpec& o) const {
        return no_new_privileges == o.no_new_privileges && capabilities == o.capabilities &&
               private_tmp == o.private_tmp && protect_system == o.protect_system &&
               writable_paths == o.writable_paths && read_only_paths == o.read_only_paths &&
               inaccessible_paths == o.inaccessible_paths && private_network == o.private_network;
    }
};

// pkitd holds one per service for its whole life, so the sections most services leave
// out are OutOfLine (out_of_line.hpp): one null pointer each until a file sets them.
// SPEC §15 [resources]: limits written to the service's cgroup; unset: no limit.
struct ResourceLimits {
    std::optional<std::uint64_t> memory_max;   // bytes
    std::optional<std::uint64_t> memory_high;  // bytes
    std::optional<double> cpu_max;             // cores
    std::optional<std::int64_t> cpu_weight;    // 1-10000
    std::optional<std::int64_t> pids_max;
    std::optional<std::int64_t> io_weight;  // 1-10000
    bool operator==(const ResourceLimits&) const = default;
};

// Which parse of its file a spec came from: the loader numbers every parse of a
// service file afresh (never 0, never twice in a process), and the spec carries the
// number through every copy of it. Two specs of the same name with the same number
// hold the same values, so a reload tells an unchanged service without comparing each
// key. Whatever changes a spec but the loader sets it back to 0, "not known". Not part
// of the value: == ignores it.
struct ParseStamp {
    std::uint64_t number = 0;
    // Known to be the same parse: the values are equal without a look.
    bool same_parse(const ParseStamp& o) const { return number != 0 && number == o.number; }
    friend bool operator==(const ParseStamp&, const ParseStamp&) { return true; }
};

struct ServiceSpec {
    std::string name;
    std::string file;  // the path pkitd opened, for messages

    std::vector<std::string> command;
    OutOfLine<ProcessSpec> process;  // cwd, env, clear_env, env_file, umask, rlimits, user, group
    // As written: a file with `instances` > 1 named by its NAME stands for every
    // instance it has at the time (SPEC §13), so `scale` changes no dependent.
    std::vector<std::string> after;
    ExitCodes success_codes{0};
    Duration timeout = 0s;  // 0: none
    bool autostart = true;
    bool escalate = false;
    ServiceType type = ServiceType::service;
    bool affects_readiness = true;  // counts toward pkitd's own readiness (SPEC §11)

    RestartSpec restart;
    OutOfLine<StormSpec> storm;
    OutOfLine<Predicate> stop_when;
    OutOfLine<Predicate> give_up_when;
    OutOfLine<ProbeSpec> health;
    OutOfLine<ReadySpec> ready;
    StopSpec stop;
    OutputSpec output;
    OutOfLine<std::vector<ListenSpec>> listen;  // [[listen]], in file order
    OutOfLine<ResourceLimits> resources;
    OutOfLine<Schedule> schedule;      // SPEC §12: oneshot jobs only
    OutOfLine<SecuritySpec> security;  // SPEC §19 [security]

    // SPEC §13: I for the instance NAME@I of a file with `instances` > 1; 0 for a
    // service of its own. The file's name is `name` up to the "@".
    unsigned instance = 0;
    ParseStamp stamp;

    bool operator==(const ServiceSpec&) const = default;
};

enum class Strategy { one_for_one, one_for_all, rest_for_one };

struct GroupSpec {
    std::string name;
    Strategy strategy = Strategy::one_for_one;
    // Start order, as written: a file with instances stands for all of them, in order.
    std::vector<std::string> members;
    int max_restarts = -1;  // restart events allowed in the window
    Duration within = 0s;
    bool operator==(const GroupSpec&) const = default;
};

struct RootSpec {
    int max_restarts = 0;  // how often a failed group is restarted whole
    Duration within = 60s;
    bool operator==(const RootSpec&) const = default;
};

// pkitd.toml [http] (SPEC §11): the read-only endpoint for probes and metrics.
struct HttpSpec {
    std::optional<std::string> listen;  // "host:port", "[v6]:port"; nullopt: off
    bool operator==(const HttpSpec&) const = default;
};

// pkitd.toml [output] (SPEC §18): the directory every service without a `file` of its
// own writes NAME.log in, and the log-file defaults of every service.
struct DaemonOutputSpec {
    std::optional<std::string> dir;  // as written, maybe relative; nullopt (or ""): none
    std::uint64_t file_max_size = 10 * 1024 * 1024;
    int file_keep = 5;
    LogFormat file_format = LogFormat::text;
    bool operator==(const DaemonOutputSpec&) const = default;
};

// pkitd.toml `exit_when` (SPEC §12): run until told to stop, or end as a job container
// once nothing can change without an operator.
enum class ExitWhen { never, all_done };

// pkitd.toml.
// SPEC §15 `cgroups`: use a cgroup v2 hierarchy only where it is pkitd's own to
// manage, never, or always (start-up fails without one).
enum class CgroupMode { automatic, off, required };

struct DaemonSpec {
    std::optional<std::string> socket;
    std::vector<Principal> control_users;
    std::optional<Principal> control_group;
    Duration shutdown_timeout = 0s;  // 0: none
    StormSpec storm{.pause = std::nullopt, .threshold = 50.0, .decay = 60s};
    RootSpec root;
    std::vector<GroupSpec> groups;  // in name order
    HttpSpec http;
    // SPEC §13: every run's environment gets these after the user's account and before
    // the service's own env_file and env.
    std::map<std::string, std::string> env;
    std::vector<std::string> env_files;
    CgroupMode cgroups = CgroupMode::automatic;  // read at start-up only
    ExitWhen exit_when = ExitWhen::never;
    DaemonOutputSpec output;
    bool operator==(const DaemonSpec&) const = default;
};

// A whole configuration tree: pkitd.toml plus services/*.toml.
struct Tree {
    std::string dir;  // as given
    DaemonSpec daemon;
    std::vector<ServiceSpec> services;  // in name order

    const ServiceSpec* find_service(std::string_view name) const;
    const GroupSpec* find_group(std::string_view name) const;
    // The group a service belongs to (an instance: also by its file's name), or nullptr
    // for the root group.
    const GroupSpec* group_of(std::string_view service) const;
};

// Names for display and the wire protocol.
std::string_view to_string(RestartPolicy);
std::string_view to_string(RestartOrder);
std::string_view to_string(ListenKind);
std::string_view to_string(ServiceType);
std::string_view to_string(LaunchError);
std::string_view to_string(ProbeKind);
std::string_view to_string(Strategy);
std::string_view to_string(Forward);
std::string_view to_string(LogFormat);
std::string_view to_string(CgroupMode);
std::string_view to_string(ProtectSystem);

}  // namespace pkit::config
