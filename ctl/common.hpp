#pragma once
// What every pkitctl subcommand shares: the global options, the exit statuses of
// SPEC §10, the errors that map onto them, and one request/reply exchange.

#include <chrono>
#include <stdexcept>
#include <string>

#include "proto/protocol.hpp"

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

// The socket to use: --socket, else $PKIT_SOCKET, else /run/pkit/pkitd.sock, unless
// that does not exist and $XDG_RUNTIME_DIR/pkit/pkitd.sock does.
std::string socket_path(const GlobalOptions& global);

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

// Sends `request` and returns the result of its reply. An error reply throws
// CtlError(1, "CODE: MESSAGE"); no connection or no reply in time throws CtlError(4).
proto::json call(const GlobalOptions& global, const proto::Request& request);
// The same with the reply's deadline given: `reply_timeout` instead of --timeout.
proto::json call(const GlobalOptions& global, const proto::Request& request,
                 std::chrono::milliseconds reply_timeout);

// The result of a reply, or the CtlError its error reply means (see call()).
proto::json result_of(proto::Reply reply, const std::string& path);

// The --timeout as a duration.
std::chrono::milliseconds timeout_of(const GlobalOptions& global);
// The deadline of a reply that waits `work` seconds of pkitd's work: --timeout when
// given, else the work plus the default --timeout (10 s) as a margin.
std::chrono::milliseconds timeout_for_work(const GlobalOptions& global, double work);

// Prints `value` as compact JSON and a newline (the --json output).
void print_json(const proto::json& value);

// The services of a start/stop/restart/signal/wait result, parsed.
std::vector<proto::ServiceStatus> services_of(const proto::json& result);

// Prints a result holding status rows (start, stop, restart, signal, wait): as JSON
// with --json, else as the status table. Returns k_exit_ok.
int print_services(const GlobalOptions& global, const proto::json& result);

}  // namespace pkit::ctl
