#pragma once
// `pkitd --check` on [security] (SPEC §19): a warning at each key this pkitd could not
// apply where it runs, since every launch of such a service would fail with `sandbox`.

#include <vector>

#include "config/loader.hpp"

namespace pkit::shell {

// What pkitd can do here, found once: tests give their own.
struct SandboxAbilities {
    bool root = false;               // euid 0
    bool can_drop_bounding = false;  // CAP_SETPCAP in the effective set
    bool mount_namespace = false;    // a child could unshare its mounts and clone a tree
    bool network_namespace = false;  // a child could unshare its network
};

// Probes this process (a forked child tries the namespaces).
SandboxAbilities sandbox_abilities_here();

// One warning ("FILE:LINE:COLUMN: warning: security.KEY: not applied here: WHY; every
// launch fails with launch error sandbox") per key of each file that `abilities` could
// not apply, and per listed path missing here (the first instance of a file speaks for
// the others).
std::vector<config::Diagnostic> sandbox_warnings(const config::Tree& tree,
                                                 const SandboxAbilities& abilities);

}  // namespace pkit::shell
