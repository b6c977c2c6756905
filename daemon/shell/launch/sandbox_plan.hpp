#pragma once
// SPEC §19 [security] on the parent's side: the plan the child follows
// (sandbox_child.hpp), with every path, label and slot made before the clone.

#include <sys/types.h>

#include <string>
#include <vector>

#include "config/model.hpp"
#include "daemon/shell/launch/sandbox_child.hpp"

namespace pkit::shell {

// What a ChildSandbox points into: kept alive, unchanged, until the child has exec'd.
struct SandboxStore {
    std::vector<std::string> paths;
    std::vector<int> fds;  // the capture slots
    std::string cwd;       // pkitd's working directory, entered again (chdir_to)
};

// The plan for `security`, for a run whose user is `run_uid` and which has a `cwd` of
// its own or not. `labels` gets the words each step's failure names
// ("protect_system \"strict\": /", "writable_paths /srv/data", ...). The mount steps,
// in order: a capture of every path kept writable (strict's /dev, /proc, /sys and /run,
// and writable_paths); "/" read-only (strict); then, parents before children, each
// read-only path (full's /usr, /boot, /efi and /etc; read_only_paths) and each captured
// path mounted back (a path both writable and read-only ends read-only); the private
// /tmp and /var/tmp; the inaccessible paths last, over everything.
ChildSandbox plan_sandbox(const config::SecuritySpec& security, uid_t run_uid, bool has_cwd,
                          SandboxStore& store, std::vector<std::string>& labels);

// The protections of `security` in effect, as status and `pkitctl show` name them:
// "no_new_privileges", "capabilities CAP_NET_BIND_SERVICE", "protect_system strict", ...
std::vector<std::string> sandbox_words(const config::SecuritySpec& security);

}  // namespace pkit::shell
