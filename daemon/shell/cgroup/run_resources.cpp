#include "daemon/shell/cgroup/run_resources.hpp"

#include <utility>

#include "daemon/shell/cgroup/cgroup_tree.hpp"

namespace pkit::shell {

std::vector<proto::Resources> read_run_resources(const std::vector<pid_t>& groups,
                                                 const std::vector<RunCgroupRead>& cgroups,
                                                 bool descendants) {
    std::vector<GroupScan> scans;
    scans.push_back(
        scan_group_resources(groups, {}, descendants || runs_have_cgroups(groups, cgroups)));
    return finish_run_resources(groups, cgroups, std::move(scans), descendants);
}

bool runs_have_cgroups(const std::vector<pid_t>& groups,
                       const std::vector<RunCgroupRead>& cgroups) {
    return !groups.empty() && cgroups.size() == groups.size();
}

std::vector<proto::Resources> finish_run_resources(const std::vector<pid_t>& groups,
                                                   const std::vector<RunCgroupRead>& cgroups,
                                                   std::vector<GroupScan> scans, bool descendants) {
    const bool in_cgroups = runs_have_cgroups(groups, cgroups);
    if (!in_cgroups && !descendants) {
        return add_group_scans(std::move(scans));
    }
    std::vector<std::pair<pid_t, std::size_t>> members;
    std::vector<pid_t> roots(groups.size(), 0);  // the runs measured by their descendants
    for (std::size_t k = 0; k < groups.size(); ++k) {
        if (groups[k] > 0 && in_cgroups && !cgroups[k].dir.empty()) {
            for (pid_t pid : cgroup_procs(cgroups[k].dir)) {
                members.emplace_back(pid, k);
            }
        } else if (descendants) {
            roots[k] = groups[k];
        }
    }
    if (descendants) {
        auto more = shell::descendants(scans, roots);
        members.insert(members.end(), more.begin(), more.end());
    }
    std::vector<proto::Resources> result = add_group_scans(std::move(scans), std::move(members));
    if (!in_cgroups) {
        return result;
    }
    for (std::size_t k = 0; k < groups.size() && k < result.size(); ++k) {
        const RunCgroupRead& cgroup = cgroups[k];
        if (groups[k] <= 0 || cgroup.dir.empty()) {
            continue;
        }
        if (auto usage = cgroup_cpu_usage_usec(cgroup.dir);
            usage && cgroup.cpu_base_usec && *usage >= *cgroup.cpu_base_usec) {
            result[k].cpu_seconds = static_cast<double>(*usage - *cgroup.cpu_base_usec) / 1e6;
        }
        if (auto memory = cgroup_memory_current(cgroup.dir)) {
            result[k].rss_bytes = static_cast<std::int64_t>(*memory);
        }
    }
    return result;
}

}  // namespace pkit::shell
