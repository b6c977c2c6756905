#pragma once
// Finding the cgroup v2 hierarchy pkitd may manage (SPEC §15), as pure functions: the
// texts of /proc/self/mountinfo and /proc/self/cgroup in, paths out; and the choice of
// `auto`, `off` or `required` made from facts the caller gathered (cgroups.hpp). No I/O
// here, so every rule is a table test.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/model.hpp"

namespace pkit::shell {

// One cgroup2 mount of /proc/self/mountinfo: which directory of the hierarchy (`root`,
// "/" for the whole of it, a sub-path for a bind mount or a cgroup namespace) appears
// where (`mount_point`). Octal escapes (\040 for a space) are decoded.
struct Cgroup2Mount {
    std::string root;
    std::string mount_point;
    bool read_only = false;
    bool operator==(const Cgroup2Mount&) const = default;
};

// Every cgroup2 mount in mountinfo's text, in file order; lines that do not parse are
// skipped.
std::vector<Cgroup2Mount> parse_cgroup2_mounts(std::string_view mountinfo);

// The unified hierarchy's path of /proc/self/cgroup's text (its "0::PATH" line), or
// nullopt when there is none (a v1-only system). A deleted cgroup's " (deleted)" suffix
// makes it none.
std::optional<std::string> parse_unified_path(std::string_view proc_cgroup);

// Where the cgroup `path` of the hierarchy is on disk: under the first read-write mount
// whose root contains it (a read-only one only when no read-write one does), or
// nullopt when no mount shows it.
struct CgroupDir {
    std::string dir;
    bool read_only = false;
};
std::optional<CgroupDir> locate_cgroup(const std::vector<Cgroup2Mount>& mounts,
                                       std::string_view path);

// What pkitd found out about its cgroup, for choose_cgroup.
struct CgroupFacts {
    std::optional<std::string> dir;  // where its cgroup is on disk; nullopt: not found
    std::string missing;             // why not, when dir is nullopt
    bool pid1 = false;               // PID 1 of its PID namespace
    // The cgroup is the hierarchy's own root (no cgroup.type file): a PID 1 there has no
    // cgroup namespace of its own, and that cgroup is the machine's.
    bool hierarchy_root = false;
    bool delegated = false;    // trusted.delegate or user.delegate is set on it
    bool writable = false;     // pkitd may create cgroups in it
    std::string not_writable;  // why not, when !writable
    bool other_pkitd = false;  // its _pkitd holds processes: another pkitd lives there
};

// The outcome: use `path`, or not, and why not. With `required`, !enabled is a start-up
// error (exit 3) whose message is `reason`.
struct CgroupChoice {
    bool enabled = false;
    std::string path;
    std::string reason;  // why not; empty when enabled
    bool operator==(const CgroupChoice&) const = default;
};

// SPEC §15: `off` never; `auto` only a cgroup that is pkitd's own to manage (PID 1 of a
// namespace whose cgroup is not the hierarchy's root, or a delegated cgroup), writable,
// with no other pkitd in it; `required` any writable one with no other pkitd.
CgroupChoice choose_cgroup(config::CgroupMode mode, const CgroupFacts& facts);

// `populated` of a cgroup.events text; nullopt when the key is missing.
std::optional<bool> parse_populated(std::string_view events);
// The value of `key` in a flat keyed file (cpu.stat, memory.events): "KEY VALUE" lines.
std::optional<std::uint64_t> parse_keyed(std::string_view text, std::string_view key);

}  // namespace pkit::shell
