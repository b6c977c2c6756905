// Checks across files: `after` targets, group members, services in two groups.
// Dependency cycles are in cycles.cpp.

#include <algorithm>

#include "config/load_steps.hpp"

namespace pkit::config::detail {
namespace {

std::string unknown_service(std::string_view what, const std::string& name,
                            const std::vector<std::string>& known) {
    std::string message = cat(what, ": unknown service ", quote(name));
    if (auto guess = closest(name, known)) {
        message += cat("; did you mean ", quote(*guess), "?");
    }
    return message;
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
    return std::ranges::find(names, name) != names.end();
}

void check_after(const ServiceDraft& draft, const std::vector<std::string>& known,
                 std::vector<Diagnostic>& out) {
    const ServiceSpec& spec = draft.spec;
    Diags d(spec.file, out);
    for (std::size_t i = 0; i < spec.after.size(); ++i) {
        const std::string& target = spec.after[i];
        if (target == spec.name) {
            d.error(draft.after_pos[i], cat("after: ", quote(target),
                                            " is this service itself; it cannot wait for itself"));
        } else if (!contains(known, target)) {
            d.error(draft.after_pos[i], unknown_service("after", target, known));
        }
    }
}

void check_groups(const DaemonDraft& daemon, const std::vector<std::string>& known,
                  std::vector<Diagnostic>& out) {
    Diags d(daemon.file, out);
    std::vector<std::pair<std::string, std::string>> member_of;  // service, group
    for (std::size_t g = 0; g < daemon.spec.groups.size(); ++g) {
        const GroupSpec& group = daemon.spec.groups[g];
        std::string what = cat("groups.", group.name, ".members");
        for (std::size_t m = 0; m < group.members.size(); ++m) {
            const std::string& member = group.members[m];
            Pos pos = daemon.member_pos[g][m];
            if (!contains(known, member)) {
                d.error(pos, unknown_service(what, member, known));
                continue;
            }
            auto earlier =
                std::ranges::find(member_of, member, &std::pair<std::string, std::string>::first);
            if (earlier == member_of.end()) {
                member_of.emplace_back(member, group.name);
            } else if (earlier->second == group.name) {
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
    for (const ServiceDraft& draft : services) {
        check_after(draft, known, out);
    }
    check_groups(daemon, known, out);
    report_cycles(services, daemon, out);
}

}  // namespace pkit::config::detail
