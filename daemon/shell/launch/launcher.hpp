#pragma once
// Our own spawn and exec (DESIGN.md: never libuv's process spawning, because pkitd reaps
// every child itself with waitpid(-1)). launch() prepares everything that allocates in the
// parent, then clones a child that shares pkitd's memory until it execs (vfork-style: no
// page tables copied, no copy-on-write faults left behind), and the child does only
// async-signal-safe calls up to execve. A close-on-exec pipe carries
// a failure stage and errno back, so a launch failure is reported with its reason (SPEC §3) and
// never shows up as a bare "exit 127".

#include <sys/types.h>

#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/model.hpp"
#include "daemon/shell/launch/launch_child.hpp"
#include "daemon/shell/launch/launch_listen.hpp"
#include "daemon/shell/launch/sandbox_plan.hpp"

namespace pkit::shell {

struct LaunchRequest {
    const config::ServiceSpec* spec = nullptr;
    std::uint64_t run = 0;  // the run's number, for messages only
    // Added last, overriding everything else (e.g. NOTIFY_SOCKET for sd_notify).
    std::vector<std::pair<std::string, std::string>> extra_env;
    // The run's record (run_records.hpp), written by the child; fd -1: none.
    ChildRecord record = {};
    // pkitd.toml's env_file and env for the run's environment (SPEC §13); nullptr: none.
    // Read during the call only.
    const config::DaemonSpec* daemon = nullptr;
    // Its [[listen]] sockets, in file order (SPEC §14): fds 3, 4, ... in the run.
    std::vector<ListenFd> listen = {};
    // The cgroup directory the child starts in, or joins before anything else (SPEC
    // §15); empty: none. Without `cgroup_clone`, the child always joins it itself.
    std::string cgroup_dir;
    bool cgroup_clone = true;
};

// A started run. The fds are the parent's ends of the child's stdout and stderr pipes,
// O_NONBLOCK|O_CLOEXEC, owned by the caller.
struct Launched {
    pid_t pid = -1;
    int stdout_fd = -1;
    int stderr_fd = -1;
};

struct LaunchFailure {
    config::LaunchError kind;
    // "KIND: WHAT: REASON", e.g. "not_found: nosuchbin: No such file or directory",
    // ready for last_launch_error (SPEC §5).
    std::string message;
};

// Starts one run of `request.spec`: user and group resolved, the environment
// (build_environment, launch_env.hpp), the variables of command and cwd expanded from
// it (SPEC §13), argv[0] looked up in the service's own PATH, then clone (vfork-style, see
// clone_child); the child gets a new session, default signal dispositions, an empty signal mask,
// stdin /dev/null, stdout/stderr to pipes, no other inherited fd, pkitd's original RLIMIT_NOFILE
// (see raise_nofile_limit), umask, rlimits, cwd and credentials, then execve. Blocks until the
// child has exec'd or reported a failure (a failed child is waited for here, so the caller's reaper
// never sees it). For exec probes and tests; runs go through prepare_launch and the Spawner.
std::expected<Launched, LaunchFailure> launch(const LaunchRequest& request);

// What describes a child's failure report in words (the strings launch() would use);
// copied out of the spec, which a reload may replace while the child is starting.
struct LaunchContext {
    std::string path;  // the program execve was given
    std::string cwd;
    std::string user;                  // the user (or group) as written
    std::vector<std::string> rlimits;  // the names of the spec's rlimits, in order
    std::string cgroup;                // the cgroup directory joined, or empty
    std::vector<std::string> sandbox;  // what each [security] step's failure names
};

// A cloned child whose exec is not confirmed yet (its report not read). The fds are the parent's
// ends, all O_NONBLOCK|O_CLOEXEC and owned by the holder: stdout and stderr as in Launched, and the
// close-on-exec report pipe, which reaches end of file once the child has exec'd and
// carries a ChildReport when it failed.
struct StartedLaunch {
    pid_t pid = -1;
    int stdout_fd = -1;
    int stderr_fd = -1;
    int report_fd = -1;
    LaunchContext context;
};

// The first half of launch(): prepare_launch() then spawn_prepared(). Returns once the
// child has exec'd or failed, without reading its report. Failures found before the
// child exists (not_found, bad_user, bad_env_file, pipe or clone errors) come back here.
std::expected<StartedLaunch, LaunchFailure> start_launch(const LaunchRequest& request);

// A launch with everything allocated and opened, not spawned yet: the plan the child
// follows (with the strings it points into) and both ends of its three pipes. The
// destructor closes whatever fds it still owns.
struct PreparedLaunch {
    PreparedLaunch() = default;
    ~PreparedLaunch();
    PreparedLaunch(const PreparedLaunch&) = delete;
    PreparedLaunch& operator=(const PreparedLaunch&) = delete;

    ChildPlan plan;  // argv and envp point into args and env
    std::vector<std::string> args;
    std::vector<std::string> env;
    ChildFds child{-1, -1, -1};       // the child's ends
    StartedLaunch parent;             // pkitd's ends and the context; pid -1
    std::vector<int> listen_scratch;  // plan.listen.scratch points here
    SandboxStore sandbox;             // plan.sandbox points here
};

// Everything of a launch that allocates or may fail before the child exists: the
// environment, the program's path, user and group, the pipes. Runs on the loop thread.
// Failures are start_launch()'s.
std::expected<std::unique_ptr<PreparedLaunch>, LaunchFailure> prepare_launch(
    const LaunchRequest& request);

// Clones the child of `prepared` (clone_child), closes the child's ends and hands over
// pkitd's ends with the pid; blocks until the child has exec'd or failed. Allocates only
// for a clone failure's message; safe on any thread (the Spawner's).
std::expected<StartedLaunch, LaunchFailure> spawn_prepared(PreparedLaunch& prepared);

// The outcome of a report read: nullopt while the child has neither exec'd nor failed
// (only without `wait`); otherwise the exec succeeded (a value) or the failure. On an
// outcome the report fd is closed, and on a failure the output fds too; the failed
// child exits with 127 and must still be reaped by someone. With `wait`, blocks until the
// child has exec'd or failed.
using LaunchOutcome = std::expected<void, LaunchFailure>;
std::optional<LaunchOutcome> read_launch_report(StartedLaunch& started, bool wait);

// `text` expanded in the environment a run of `request` would get (user resolved, env
// files read now), for the probe targets that hold variables (tcp, http, file). Fails as
// prepare_launch would: bad_user, bad_env_file, undefined_variable.
std::expected<std::string, LaunchFailure> expand_in_run_environment(const LaunchRequest& request,
                                                                    std::string_view text,
                                                                    std::string_view what);

// Raises pkitd's soft RLIMIT_NOFILE to its hard limit (pkitd holds two pipes per
// service) and remembers the original, which every child gets back before exec so that
// services see the limit they would have seen without pkitd. Call once at start-up,
// before the first launch. Returns the errno on failure (the limit then stays).
std::expected<void, int> raise_nofile_limit();

// The descriptors under the soft RLIMIT_NOFILE that no launch takes (an eighth of the
// limit when that is less): with them pkitd still answers pkitctl, reloads (a
// directory and a file open at a time) and scrapes when the services have used up the
// rest. A launch whose pipes would reach into them fails as `resources`.
inline constexpr unsigned k_fd_reserve = 128;

// Sends `signo` to `pid`, or to its whole process group when `group` (runs are session
// leaders, so the pgid is the pid). Returns false when nothing was there to signal
// (ESRCH) or the kill was refused; never signals pid <= 1, so a zero or stale pid cannot
// turn into kill(0) or kill(-1).
bool signal_run(pid_t pid, int signo, bool group);

// Whether `signo` is SIGTSTP, SIGTTIN or SIGTTOU: a stop signal a process may catch,
// which the kernel discards while pending when SIGCONT arrives.
bool stop_class_signal(int signo);

// The stop sequence of SPEC §7: `signo` with SIGCONT, so that a stopped process can act
// on it. SIGCONT goes after `signo`, except for a stop-class signal, where it goes first
// (sent after, it would discard the signal before a handler ran); it is skipped when
// signo is SIGKILL or SIGCONT itself. Returns whether `signo` reached something (false
// on ESRCH, as signal_run).
bool stop_signal(pid_t pid, int signo, bool group);

}  // namespace pkit::shell
