#pragma once
// Where the control socket is when nobody says (SPEC §1, §10): /run/pkit/pkitd.sock for
// a pkitd that may create /run/pkit, else, for an unprivileged pkitd, the same name
// under $XDG_RUNTIME_DIR. pkitd and pkitctl apply the rule from their own side: pkitd
// by whether it can create /run/pkit, pkitctl by which of the two sockets exists.

#include <optional>
#include <string>

namespace pkit::proto {

inline constexpr const char* k_default_socket = "/run/pkit/pkitd.sock";

// $XDG_RUNTIME_DIR/pkit/pkitd.sock, or nullopt when XDG_RUNTIME_DIR is unset or empty.
std::optional<std::string> runtime_dir_socket();

}  // namespace pkit::proto
