#pragma once
// What every pkitctl subcommand shares: the global options, the exit statuses of
// SPEC §10, the errors that map onto them (ctl/global_options.hpp), and one
// request/reply exchange.

#include <chrono>
#include <stdexcept>
#include <string>

#include "ctl/global_options.hpp"
#include "proto/protocol.hpp"

namespace pkit::ctl {

// The socket to use: --socket, else $PKIT_SOCKET, else /run/pkit/pkitd.sock, unless
// that does not exist and $XDG_RUNTIME_DIR/pkit/pkitd.sock does.
std::string socket_path(const GlobalOptions& global);
// Where socket_path() took it from, for the messages: "--socket", "$PKIT_SOCKET" or
// "the default".
std::string socket_origin(const GlobalOptions& global);

// Sends `request` and returns the result of its reply. An error reply throws
// CtlError(1, "CODE: MESSAGE"); no connection or no reply in time throws CtlError(4).
proto::json call(const GlobalOptions& global, const proto::Request& request);
// The same with the reply's deadline given: `reply_timeout` instead of --timeout.
proto::json call(const GlobalOptions& global, const proto::Request& request,
                 std::chrono::milliseconds reply_timeout);

// Sends `request` and prints its result as JSON, as print_json(call(...)) would, but
// from the reply line as it came when it is a valid successful reply (no JSON tree of
// the result is built). Errors as call().
void print_result_text(const GlobalOptions& global, const proto::Request& request);

// The same for a request whose result holds status rows (status, start, stop, ...):
// the rows, read straight from the reply line (proto/status_rows.hpp), without the
// result's JSON tree. Errors as call().
std::vector<proto::ServiceStatus> call_for_rows(const GlobalOptions& global,
                                                const proto::Request& request,
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
