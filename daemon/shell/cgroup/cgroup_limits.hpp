#pragma once
// A service's [resources] limits (SPEC §15) written to its cgroup, and what was not
// applied and why: a limit whose controller is not available is reported, never
// silently ignored.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/loader.hpp"
#include "config/model.hpp"
#include "daemon/shell/cgroup/cgroup_tree.hpp"

namespace pkit::shell {

// One key's write: the controller it needs, the cgroup file, the text. Pure.
struct LimitWrite {
    std::string key;  // "memory_max"
    std::string controller;
    std::string file;
    std::string text;
    bool operator==(const LimitWrite&) const = default;
};

// The writes of every key set in `limits`, and of every key set only in `before` (its
// default back: "max", or weight 100), in key order.
std::vector<LimitWrite> limit_writes(const config::ResourceLimits& limits,
                                     const config::ResourceLimits& before = {});

struct LimitReport {
    std::vector<std::string> applied;
    std::vector<std::pair<std::string, std::string>> not_applied;  // key, reason
    bool operator==(const LimitReport&) const = default;
};

// Writes `limits` to ROOT/NAME (see limit_writes). A key whose controller the tree did
// not enable, or whose write fails, is not applied, with the reason.
LimitReport apply_limits_to(const CgroupTree& tree, std::string_view name,
                            const config::ResourceLimits& limits,
                            const config::ResourceLimits& before = {});
// Every key set in `limits`, not applied for `reason` (no cgroups).
LimitReport limits_not_applied(const config::ResourceLimits& limits, const std::string& reason);
// "memory_max (the memory controller is not available in /x); pids_max (...)", for the
// log; empty when everything was applied.
std::string describe_not_applied(const LimitReport& report);

// `pkitd --check` (SPEC §15): a warning for each [resources] key that pkitd, started
// now, would not apply: no cgroup it would use (`choice`, with its reason), or the
// key's controller is not among `available` (ROOT's cgroup.controllers). At the key's
// line in its file, once per file (instances share theirs).
std::vector<config::Diagnostic> limit_warnings(const config::Tree& tree, const CgroupChoice& choice,
                                               const std::vector<std::string>& available);
// The same for this process: its cgroup found from `proc_self` as pkitd would.
std::vector<config::Diagnostic> limit_warnings(const config::Tree& tree,
                                               const std::string& proc_self);
// With `cgroups = "required"` and a cgroup in use, each key whose controller is not
// among `available` is a configuration error (SPEC §15), positioned as above; empty
// otherwise (no cgroup at all is pkitd's exit 3, not a key's error).
std::vector<config::Diagnostic> required_limit_errors(const config::Tree& tree,
                                                      const CgroupChoice& choice,
                                                      const std::vector<std::string>& available);
// The same for this process, as limit_warnings(tree, proc_self) finds its cgroup.
std::vector<config::Diagnostic> required_limit_errors(const config::Tree& tree,
                                                      const std::string& proc_self);

}  // namespace pkit::shell
