#include "proto/socket_path.hpp"

#include <cstdlib>

namespace pkit::proto {

std::optional<std::string> runtime_dir_socket() {
    const char* dir = std::getenv("XDG_RUNTIME_DIR");
    if (dir == nullptr || *dir == '\0') {
        return std::nullopt;
    }
    return std::string(dir) + "/pkit/pkitd.sock";
}

}  // namespace pkit::proto
