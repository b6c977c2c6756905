#pragma once
// Running short-lived commands (pkitctl, pkitd --check, probes of the environment) with
// their output captured and a deadline, and the environment handed to children.

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace pkit::itest {

struct CommandResult {
    int exit_code = -1;  // 128+N when killed by signal N; -1 when it timed out
    bool timed_out = false;
    std::string out;
    std::string err;
    // stdout and stderr, for messages and for text that may go to either.
    std::string all() const { return out + err; }
};

// Runs argv (argv[0] a path) with stdin /dev/null; kills it with SIGKILL at the
// deadline. `env` entries ("KEY=VALUE") are added to the environment.
CommandResult run_command(const std::vector<std::string>& argv,
                          std::chrono::milliseconds timeout = std::chrono::seconds(20),
                          const std::vector<std::string>& env = {});

// Runs PKITCTL_BIN with `args`.
CommandResult run_ctl(const std::vector<std::string>& args,
                      std::chrono::milliseconds timeout = std::chrono::seconds(20),
                      const std::vector<std::string>& env = {});
// Runs PKITD_BIN with `args` (for --check, --version, --help, invalid trees).
CommandResult run_pkitd(const std::vector<std::string>& args,
                        std::chrono::milliseconds timeout = std::chrono::seconds(20),
                        const std::vector<std::string>& env = {});

// This process's environment without PKIT_SOCKET and PKIT_CONFIG (a developer's own
// settings must not leak into a case), plus `extra`.
std::vector<std::string> child_environment(const std::vector<std::string>& extra);

// Exit status as a shell reports it: the code, or 128+N for death by signal N.
int decode_wait_status(int status);

// Whether the tests run as root (PID namespaces, other users).
bool is_root();
// Whether an executable exists at `path` or in PATH.
bool have_program(const std::string& name);
// Why pkitd cannot be run as PID 1 of a new PID namespace here (not root, no util-linux
// unshare, or unshare fails), or empty when it can: then DaemonOptions::wrapper =
// pid_namespace_wrapper() runs it so.
std::string pid_namespace_unavailable();
std::vector<std::string> pid_namespace_wrapper();

// The real python3 executable (not a pyenv shim that would exec it later), or "".
std::string python3();
// A loopback TCP port that nothing was bound to a moment ago.
int unused_port();

// argv-style pointers into `items`, ending in a null pointer (valid while `items` is).
std::vector<char*> c_strings(std::vector<std::string>& items);

// A pkitctl started in the background with its stdout and stderr in files; SIGKILLed
// and reaped at destruction when still running.
class BackgroundCtl {
public:
    BackgroundCtl(const std::vector<std::string>& args, const std::string& out_path,
                  const std::string& err_path);
    ~BackgroundCtl();
    BackgroundCtl(const BackgroundCtl&) = delete;
    BackgroundCtl& operator=(const BackgroundCtl&) = delete;

    void signal(int sig) const;
    bool running() { return !reap(); }
    // The exit status (128+N for a signal), or nullopt when still running at the deadline.
    std::optional<int> wait_exit(std::chrono::milliseconds timeout);

private:
    bool reap();
    pid_t m_pid = -1;
    std::optional<int> m_status;
};

// Wall-clock unix seconds, as pkitd reports times.
double unix_now();

}  // namespace pkit::itest
