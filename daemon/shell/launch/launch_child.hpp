#pragma once
// The child side of launch(): everything between clone and execve. Internal to the
// launcher. The plan is computed in the parent so that the child only reads it: the
// child shares pkitd's memory (CLONE_VM) while pkitd's other threads run on, so it may
// call async-signal-safe functions only, must not allocate or take a lock, and must not
// use glibc calls that involve the process's threads (setuid and the like: raw system
// calls instead).

#include <sys/resource.h>
#include <sys/types.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "daemon/shell/launch/run_records.hpp"
#include "daemon/shell/launch/sandbox_child.hpp"

namespace pkit::shell {

// Where the child failed; the parent turns it into a LaunchError.
enum class ChildStage : int { setup, rlimit, cwd, credentials, exec, cgroup, sandbox };

// What a failed child writes to the report pipe before _exit(127). Smaller than
// PIPE_BUF, so the write is atomic.
struct ChildReport {
    int stage = 0;   // ChildStage
    int error = 0;   // errno
    int index = -1;  // the rlimit that failed (ChildStage::rlimit), the sandbox step's label
};

struct ChildRlimit {
    int resource;
    rlimit limit;
};

// The [[listen]] sockets a run gets (SPEC §14, sd_listen_fds(3)): prepared by
// plan_listen() (launch_listen.hpp), placed by the child at 3, 4, ... in order.
struct ChildListen {
    std::vector<int> fds;  // pkitd's copies, close-on-exec, owned by the PreparedLaunch
    // Room for fds.size() ints that the child writes (it may not allocate).
    int* scratch = nullptr;
    // The value of the LISTEN_PID=... entry of envp, with room for any pid and its NUL:
    // the child writes its own pid there after the clone. Null without sockets.
    char* pid_digits = nullptr;
};

// Everything the child needs, precomputed. argv/envp point into strings the parent
// keeps alive until launch() returns.
struct ChildPlan {
    std::string path;  // what to execve
    std::string cwd;   // empty: stay in pkitd's directory
    std::vector<char*> argv;
    std::vector<char*> envp;
    std::optional<mode_t> umask;
    // pkitd's original RLIMIT_NOFILE, given back before the service's own rlimits.
    std::optional<rlimit> nofile;
    std::vector<ChildRlimit> rlimits;
    bool change_credentials = false;
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<gid_t> groups;
    // The run's record, which the child completes and writes once it leads its own
    // session (fd -1: none).
    ChildRecord record;
    ChildListen listen;
    // The service's cgroup directory, which clone3 starts the child in
    // (CLONE_INTO_CGROUP), and its cgroup.procs, which the child joins first where
    // clone3 cannot (join_cgroup); -1: none.
    int cgroup_dir_fd = -1;
    int cgroup_procs_fd = -1;
    // SPEC §19 [security]: applied after the rlimits and before cwd (namespaces, mounts,
    // bounding set) and after the user change (capability sets, no_new_privileges).
    ChildSandbox sandbox;
};

// The child's ends of its pipes (all close-on-exec in the parent).
struct ChildFds {
    int stdout_fd;
    int stderr_fd;
    int report_fd;
};

// Closes each fd that is >= 0 (parent side).
void close_fds(std::initializer_list<int> fds);

// Runs in the freshly cloned child with every signal blocked: new session, its run record,
// default
// dispositions, empty mask, stdio, no other fd across exec, RLIMIT_NOFILE, umask, rlimits,
// the sandbox's namespaces and mounts, cwd, credentials, the sandbox's capabilities and
// no_new_privileges, execve. Never returns: on failure it writes a ChildReport to
// fds.report_fd and calls _exit(127).
// With `unshare_below` > 0 the child shares the caller's descriptor table and, once it
// has joined its cgroup, led its session and written its record (writes only), takes a
// copy of only the descriptors below it (close_range with CLOSE_RANGE_UNSHARE): fds
// must all lie below it.
[[noreturn]] void run_child(const ChildPlan& plan, ChildFds fds, bool in_cgroup = false,
                            int unshare_below = 0);

// Starts run_child(plan, fds) in a child that shares the caller's memory until it execs
// (clone with CLONE_VM | CLONE_VFORK | SIGCHLD, on a stack of the calling thread's own;
// with a cgroup, clone3 with CLONE_INTO_CGROUP where the kernel has it, see
// clone_into_cgroup):
// no page tables copied, no copy-on-write faults in pkitd afterwards. Returns once the
// child has exec'd or exited (its report is then in the pipe), with its pid, or -1 and
// errno. The calling thread must have every signal blocked, and `plan` must stay alive
// and unchanged until this returns.
//
// After reserve_low_slots(), a child without [[listen]] sockets does not copy pkitd's
// descriptor table at all: its three descriptors are placed on the low slots, it shares
// the table at clone time and copies only what lies below the slots (see run_child).
pid_t clone_child(const ChildPlan& plan, ChildFds fds);

// Keeps three descriptors of low number open (on /dev/null, close-on-exec) for
// clone_child, when the kernel can unshare a table below a bound (Linux 5.9, and not
// refused by a seccomp filter): a clone then costs the same with 20,000 descriptors
// open as with 20. Call once, early (the slots take the lowest free numbers). Returns
// whether the slots are in use.
bool reserve_low_slots();

}  // namespace pkit::shell
