#pragma once
// The child side of launch(): everything between fork and execve. Internal to the
// launcher. The plan is computed in the parent so that the child only reads it: after
// fork the child may call async-signal-safe functions only, and must not allocate (the
// parent may have been inside malloc on another thread's behalf, and the heap lock is
// copied in whatever state it was).

#include <sys/resource.h>
#include <sys/types.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace pkit::shell {

// Where the child failed; the parent turns it into a LaunchError.
enum class ChildStage : int { setup, rlimit, cwd, credentials, exec };

// What a failed child writes to the report pipe before _exit(127). Smaller than
// PIPE_BUF, so the write is atomic.
struct ChildReport {
    int stage = 0;   // ChildStage
    int error = 0;   // errno
    int index = -1;  // the rlimit that failed, for ChildStage::rlimit
};

struct ChildRlimit {
    int resource;
    rlimit limit;
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
};

// The child's ends of its pipes (all close-on-exec in the parent).
struct ChildFds {
    int stdout_fd;
    int stderr_fd;
    int report_fd;
};

// Closes each fd that is >= 0 (parent side).
void close_fds(std::initializer_list<int> fds);

// Runs in the freshly forked child with every signal blocked: new session, default
// dispositions, empty mask, stdio, no other fd across exec, RLIMIT_NOFILE, umask, rlimits, cwd,
// credentials, execve. Never returns: on failure it writes a ChildReport to
// fds.report_fd and calls _exit(127).
[[noreturn]] void run_child(const ChildPlan& plan, ChildFds fds);

}  // namespace pkit::shell
