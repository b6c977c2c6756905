#pragma once
// Our own fork/exec (DESIGN.md: never uv_spawn, because pkitd reaps every child itself
// with waitpid(-1)). launch() prepares everything that allocates in the parent, forks,
// and the child does only async-signal-safe calls up to execve. A close-on-exec pipe
// carries a failure stage and errno back, so a launch failure is reported with its
// reason (SPEC §3) and never shows up as a bare "exit 127".

#include <sys/types.h>

#include <cstdint>
#include <expected>
#include <string>
#include <utility>
#include <vector>

#include "config/model.hpp"

namespace pkit::shell {

struct LaunchRequest {
    const config::ServiceSpec* spec = nullptr;
    std::uint64_t run = 0;  // the run's number, for messages only
    // Added last, overriding everything else (e.g. NOTIFY_SOCKET for sd_notify).
    std::vector<std::pair<std::string, std::string>> extra_env;
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

// Starts one run of `request.spec`: environment (pkitd's unless clear_env, then the
// env_files read now, then env, then extra_env), argv[0] looked up in the service's own
// PATH, user and group resolved, then fork; the child gets a new session, default signal
// dispositions, an empty signal mask, stdin /dev/null, stdout/stderr to pipes, no other
// inherited fd, umask, rlimits, cwd and credentials, then execve. Blocks only until the
// child has exec'd or reported a failure (a failed child is waited for here, so the
// caller's reaper never sees it). Must be called from the loop thread.
std::expected<Launched, LaunchFailure> launch(const LaunchRequest& request);

// Sends `signo` to `pid`, or to its whole process group when `group` (runs are session
// leaders, so the pgid is the pid). Returns false when nothing was there to signal
// (ESRCH) or the kill was refused; never signals pid <= 1, so a zero or stale pid cannot
// turn into kill(0) or kill(-1).
bool signal_run(pid_t pid, int signo, bool group);

// The stop sequence of SPEC §7: `signo`, then SIGCONT so that a stopped process can act
// on it (SIGCONT is skipped when signo is SIGKILL or SIGCONT itself).
void stop_signal(pid_t pid, int signo, bool group);

}  // namespace pkit::shell
