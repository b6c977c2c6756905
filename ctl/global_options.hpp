#pragma once
// pkitctl's global options, the exit statuses of SPEC §10 and the error that maps onto
// them: what main.cpp and the subcommands' declarations (ctl/commands.hpp) need, without
// the protocol (and nlohmann/json) that ctl/common.hpp brings.

#include <stdexcept>
#include <string>
#include <vector>

namespace pkit::ctl {

// SPEC §10 exit statuses.
enum ExitStatus : int {
    k_exit_ok = 0,
    k_exit_daemon_error = 1,  // pkitd answered with an error
    k_exit_usage = 2,         // usage error, or an invalid configuration (check)
    k_exit_not_running = 3,   // status NAME...: a named service is not running
    k_exit_unreachable = 4,   // pkitd cannot be reached or did not answer in time
};

// The options given before the command.
struct GlobalOptions {
    std::string socket;     // --socket; empty: $PKIT_SOCKET, else the default path
    bool json = false;      // --json: print the protocol's result as is
    double timeout = 10.0;  // --timeout: seconds to wait for a reply
    // --timeout was given: it bounds every reply. Otherwise the commands that wait for
    // work (stop, restart, wait) size their deadline from the work (see pkitctl.1).
    bool timeout_given = false;
    std::string color = "auto";  // --color: auto, always or never (see ctl/color.hpp)
};

// An error that ends pkitctl with `status` after printing "pkitctl: MESSAGE".
class CtlError : public std::runtime_error {
public:
    CtlError(int status, const std::string& message)
        : std::runtime_error(message), m_status(status) {}
    int status() const { return m_status; }

private:
    int m_status;
};

// A usage mistake found after parsing (exit 2).
inline CtlError usage_error(const std::string& message) {
    return CtlError(k_exit_usage, message);
}

// A command over services (start, stop, pause, ...) names some, or says --all: one.
inline void require_names_or_all(const std::string& command, const std::vector<std::string>& names,
                                 bool all) {
    if (names.empty() && !all) {
        throw usage_error(command + ": name at least one service, or --all");
    }
    if (!names.empty() && all) {
        throw usage_error(command + ": give service names or --all, not both");
    }
}

}  // namespace pkit::ctl
