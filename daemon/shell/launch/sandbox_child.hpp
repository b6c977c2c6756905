#pragma once
// SPEC §19 [security] on the child's side: what launch_child applies between clone and
// execve, as a plan the parent prepared (sandbox_plan.hpp). Like the rest of the
// child, these functions only make system calls: no allocation, no lock, no stdio.

#include <sys/types.h>

#include <cstdint>
#include <vector>

namespace pkit::shell {

// One step of the mount plan, in the order the child takes them.
enum class MountOp : std::uint8_t {
    capture,        // a detached copy of `path` with its mounts and flags (open_tree)
    readonly_root,  // "/" and every mount under it read-only (protect_system strict)
    readonly,       // `path` bound on itself, then read-only with its submounts
    restore,        // the copy captured in `slot` mounted back on `path` (writable again)
    tmpfs,          // a fresh tmpfs on `path` (private_tmp)
    inaccessible,   // an empty mode-000 directory or file mounted over `path`
};

struct MountStep {
    MountOp op = MountOp::capture;
    const char* path = nullptr;  // points into the parent's PreparedLaunch
    int slot = -1;               // capture, restore: the index in ChildSandbox::fds
    bool optional = false;       // a missing path is skipped (/boot, /var/tmp), not a failure
    int label = 0;               // what a failure names (LaunchContext::sandbox)
};

// The [security] of one launch, prepared in the parent. Labels index the words of the
// launch's context that name each protection in a failure.
struct ChildSandbox {
    bool private_network = false;
    int network_label = 0;
    bool mount_namespace = false;
    int namespace_label = 0;
    std::vector<MountStep> steps;
    int* fds = nullptr;  // room for the capture slots (the child may not allocate)
    // pkitd's working directory, entered again inside the new mounts when the service
    // has no `cwd` of its own (the old one still points at what the mounts cover); null:
    // none.
    const char* chdir_to = nullptr;
    int chdir_label = 0;
    // The bounding set is reduced to `capabilities`; with `ambient` (a run whose user
    // is not root) they are also raised as ambient capabilities after the user change.
    bool set_capabilities = false;
    std::uint64_t capabilities = 0;
    bool ambient = false;
    int capabilities_label = 0;
    bool no_new_privileges = false;
    int no_new_privileges_label = 0;

    bool any() const {
        return private_network || mount_namespace || set_capabilities || no_new_privileges;
    }
};

// Where a sandbox step failed: the label of the step (errno holds the reason), or -1
// when every step was applied.
using SandboxResult = int;
inline constexpr SandboxResult k_sandbox_ok = -1;

// The namespaces, the mount plan, the working directory, the bounding set and (with
// ambient capabilities) PR_SET_KEEPCAPS: everything that needs pkitd's privileges, so
// before the user changes.
SandboxResult sandbox_before_credentials(const ChildSandbox& sandbox);
// After the user change: the capability sets (and the ambient ones), then
// PR_SET_NO_NEW_PRIVS, the last call before execve.
SandboxResult sandbox_after_credentials(const ChildSandbox& sandbox);

}  // namespace pkit::shell
