#include "daemon/shell/exit_owners.hpp"

#include "daemon/shell/cgroup/cgroups.hpp"
#include "daemon/shell/launch/run_records.hpp"
#include "daemon/shell/probes/run_probes.hpp"
#include "daemon/shell/runs/run_notify.hpp"
#include "daemon/shell/runs/run_output.hpp"
#include "daemon/shell/runs/run_starts.hpp"
#include "daemon/shell/upgrade/upgrader.hpp"

namespace pkit::shell {

std::vector<ExitOwner*> exit_order(const ExitOwners& owners) {
    return {&owners.upgrader, &owners.starts, &owners.cgroups, &owners.output,
            &owners.probes,   &owners.notify, &owners.records};
}

bool offer_exit(const std::vector<ExitOwner*>& owners, ChildExit& exit) {
    for (ExitOwner* owner : owners) {
        if (owner->on_child_exit(exit)) {
            return true;
        }
    }
    return false;
}

}  // namespace pkit::shell
