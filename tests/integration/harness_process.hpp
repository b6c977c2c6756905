#pragma once
// Running short-lived commands (pkitctl, pkitd --check, probes of the environment) with
// their output captured and a deadline, and the environment handed to children.

#include <chrono>
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

// Wall-clock unix seconds, as pkitd reports times.
double unix_now();

}  // namespace pkit::itest
