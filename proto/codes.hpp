#pragma once
// The protocol's vocabulary (SPEC §9): its version, its commands and its error codes,
// with their wire names. Shared by pkitd and pkitctl so both spell them the same way.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "proto/fwd.hpp"

namespace pkit::proto {

// The longest request line accepted, not counting its newline (SPEC §9).
inline constexpr std::size_t k_max_line_bytes = 1024 * 1024;

enum class Command {
    ping,
    status,
    start,
    stop,
    restart,
    signal,
    logs,
    events,
    explain,
    reload,
    shutdown,
    wait,
    health,
    scale,
    upgrade,
    pause,
    resume,
    // SPEC §21 `reload --dry-run`: a command of its own, so that a pkitd that does not
    // know it refuses it (unknown_command) rather than reloading.
    reload_preview,
    rotate,  // SPEC §18: rotate log files now (`services` optional: every one)
};

enum class ErrorCode {
    bad_request,      // not JSON, not an object, a missing or wrong-typed field
    too_large,        // a line over k_max_line_bytes; the connection is then closed
    unknown_command,  // "cmd" names no command
    unknown_service,  // a named service does not exist
    invalid_config,   // reload found an invalid configuration
    forbidden,        // the peer's credentials are not allowed on the socket
    not_reached,      // wait: a service can no longer reach the condition, or `within` ran out
    restart_failed,   // a start_first restart's new run failed; the old run keeps running
    upgrade_failed,   // upgrade: the binary failed its check, or pkitd cannot hand over now
    unsupported,      // pause/resume without cgroups (SPEC §15): the message says why
    not_running,      // pause: a named service has no run to freeze (the message names it)
};

std::string_view to_string(Command command);
std::optional<Command> command_from_string(std::string_view name);

std::string_view to_string(ErrorCode code);
std::optional<ErrorCode> error_code_from_string(std::string_view name);

// An error reply, or a request that could not be parsed. `id` is the request's id
// when it could be read, else null, so the reply still matches its request.
struct Error {
    ErrorCode code = ErrorCode::bad_request;
    std::string message;
    json id;
};

}  // namespace pkit::proto
