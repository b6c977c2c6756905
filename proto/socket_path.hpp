#pragma once
// Where the control socket is when nobody says (SPEC §1, §10): /run/pkit/pkitd.sock for
// a pkitd that may create /run/pkit, else, for an unprivileged pkitd, the same name
// under $XDG_RUNTIME_DIR. pkitd and pkitctl apply the rule from their own side: pkitd
// by whether it can create /run/pkit, pkitctl by which of the two sockets exists.
// And the words both say when a socket cannot be used: which one was tried, what is
// there instead, and how to name another.

#include <optional>
#include <string>

namespace pkit::proto {

inline constexpr const char* k_default_socket = "/run/pkit/pkitd.sock";

// $XDG_RUNTIME_DIR/pkit/pkitd.sock, or nullopt when XDG_RUNTIME_DIR is unset or empty.
std::optional<std::string> runtime_dir_socket();

// How pkitctl names another control socket, the end of its connection errors.
inline constexpr const char* k_ctl_socket_hint =
    "name the socket with --socket PATH or PKIT_SOCKET=PATH (a pkitd not run as root "
    "listens on $XDG_RUNTIME_DIR/pkit/pkitd.sock)";
// How pkitd is given another control socket, the end of its socket errors.
inline constexpr const char* k_daemon_socket_hint =
    "name another with --socket PATH, PKIT_SOCKET=PATH or `socket` in pkitd.toml (a pkitd "
    "not run as root uses $XDG_RUNTIME_DIR/pkit/pkitd.sock when XDG_RUNTIME_DIR is set)";

// Why connecting to the control socket at `path` failed with `error` (an errno value),
// in words: what is at the path when it is not a socket ("/tmp is a directory, not a
// socket"), that nothing is there or nothing listens ("no such file (is pkitd
// running?)", "nothing listens on it ..."), else strerror(error). Looks at the path.
std::string connect_failure(const std::string& path, int error);

}  // namespace pkit::proto
