// Checks across files: `after` targets, group members, services in two groups.
// Dependency cycles are in cycles.cpp.

#include <algorithm>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "config/load_steps.hpp"

namespace pkit::config::detail {
namespace {

std::string unknown_service(std::string_view what, const std::string& name,
                            const std::vector<std::string>& known) {
    return cat(what, ": unknown service ", quote(name), did_you_mean(name, known));
}

// Every service name with a file, for lookups; `names` keeps the strings.
using NameSet = std::unordered_set<std::string_view>;

bool contains(const NameSet& names, const std::string& name) {
    return names.contains(name);
}

void check_after(const ServiceDraft& draft, const std::vector<std::string>& known,
                 const NameSet& known_set, std::vector<Diagnostic>& out) {
    const ServiceSpec& spec = draft.spec;
    Diags d(spec.file, out);
    for (std::size_t i = 0; i < spec.after.size(); ++i) {
        const std::string& target = spec.after[i];
        if (target == spec.name) {
            d.error(draft.after_pos[i], cat("after: ", quote(target),
                                            " is this service itself; it cannot wait for itself"));
        } else if (!contains(known_set, target)) {
            d.error(draft.after_pos[i], unknown_service("after", target, known));
        }
    }
}

void check_groups(const DaemonDraft& daemon, const std::vector<std::string>& known,
                  const NameSet& known_set, std::vector<Diagnostic>& out) {
    Diags d(daemon.file, out);
    std::unordered_map<std::string_view, std::string_view> member_of;  // service -> group
    for (std::size_t g = 0; g < daemon.spec.groups.size(); ++g) {
        const GroupSpec& group = daemon.spec.groups[g];
        std::string what = cat("groups.", group.name, ".members");
        for (std::size_t m = 0; m < group.members.size(); ++m) {
            const std::string& member = group.members[m];
            Pos pos = daemon.member_pos[g][m];
            if (!contains(known_set, member)) {
                d.error(pos, unknown_service(what, member, known));
                continue;
            }
            auto [earlier, first] = member_of.emplace(member, group.name);
            if (first) {
                continue;
            }
            if (earlier->second == group.name) {
                d.error(pos, cat(what, ": ", quote(member), " is listed twice"));
            } else {
                d.error(pos, cat(what, ": ", quote(member), " is already a member of group ",
                                 quote(earlier->second), "; a service belongs to one group"));
            }
        }
    }
}

}  // namespace

void validate_tree(const std::vector<ServiceDraft>& services, const DaemonDraft& daemon,
                   const std::vector<std::string>& known, std::vector<Diagnostic>& out) {
    // No `after` and no group member: nothing to look up, and no edge to make a cycle.
    bool edges = std::ranges::any_of(services,
                                     [](const ServiceDraft& d) { return !d.spec.after.empty(); }) ||
                 std::ranges::any_of(daemon.spec.groups,
                                     [](const GroupSpec& g) { return !g.members.empty(); });
    if (!edges) {
        return;
    }
    NameSet known_set(known.begin(), known.end());
    for (const ServiceDraft& draft : services) {
        check_after(draft, known, known_set, out);
    }
    check_groups(daemon, known, known_set, out);
    report_cycles(services, daemon, out);
}

}  // namespace pkit::config::detail
