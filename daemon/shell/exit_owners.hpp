#pragma once
// The order in which a child's exit is offered to the rooms that own children
// (child_exit.hpp), named once, apart from the Daemon, so that a unit test holds it to
// what the order is for (tests/unit/shell/test_exit_owners.cpp):
//
//   upgrade's check child ─▶ failed launch's child ─▶ cgroup hold (else OOM noted) ─▶
//   output drained ─▶ probes ─▶ notify socket ─▶ run record ─▶ (unclaimed) the core
//
// An exit the cgroup holds goes no further: the run's pipes stay open to what is left in
// its cgroup, its notify socket and probes stay its own, its record stays on disk for a
// next pkitd should this one die. Once the cgroup has emptied the exit is offered again
// (held_by the Cgroups) and reaches every owner after it, then the core.

#include <vector>

#include "daemon/shell/child_exit.hpp"

namespace pkit::shell {

class Cgroups;
class RunNotify;
class RunOutput;
class RunProbes;
class RunRecords;
class RunStarts;
namespace upgrade {
class Upgrader;
}  // namespace upgrade

// Every owner a child's exit is offered to; a new capability that must see a run's end
// is one more member here and one more place in exit_order().
struct ExitOwners {
    upgrade::Upgrader& upgrader;
    RunStarts& starts;
    Cgroups& cgroups;
    RunOutput& output;
    RunProbes& probes;
    RunNotify& notify;
    RunRecords& records;
};

// The owners in the order an exit is offered to them (above).
std::vector<ExitOwner*> exit_order(const ExitOwners& owners);

// Offers `exit` to `owners` in order; true when one claimed it (it goes no further),
// false when it is the core's.
bool offer_exit(const std::vector<ExitOwner*>& owners, ChildExit& exit);

}  // namespace pkit::shell
