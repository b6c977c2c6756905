#pragma once
// The control socket's file-system and credential side: preparing its path, its mode
// and group, and reading a peer's credentials. Internal to the control server.

#include <expected>
#include <optional>
#include <string>

#include "daemon/shell/control/control_server.hpp"

namespace pkit::shell::control_socket {

// Creates the socket's parent directory if missing (0755) and clears the way for a
// new socket: nothing there is fine; a socket nobody answers on is removed (a pkitd
// that died without cleaning up); a socket someone answers on, or a non-socket, is an
// error naming the path.
std::expected<void, std::string> prepare_path(const std::string& path);

// 0600 by default; 0660 with a control group; 0666 when control users are set.
unsigned socket_mode(const SocketOptions& options);

// Gives the bound socket its mode and, with a control group, its group.
std::expected<void, std::string> apply_mode(const SocketOptions& options);

// SO_PEERCRED of a connected socket, plus the peer's supplementary groups when
// `with_groups` (SO_PEERGROUPS, else /proc/PID/status). nullopt if the kernel will
// not say, which the caller treats as unauthorised.
std::optional<PeerCredentials> read_peer_credentials(int fd, bool with_groups);

}  // namespace pkit::shell::control_socket
