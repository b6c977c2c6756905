#include "proto/socket_path.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace pkit::proto {

std::optional<std::string> runtime_dir_socket() {
    const char* dir = std::getenv("XDG_RUNTIME_DIR");
    if (dir == nullptr || *dir == '\0') {
        return std::nullopt;
    }
    return std::string(dir) + "/pkit/pkitd.sock";
}

std::string connect_failure(const std::string& path, int error) {
    struct stat info {};
    if (error != ENOENT && error != ENAMETOOLONG && ::stat(path.c_str(), &info) == 0 &&
        !S_ISSOCK(info.st_mode)) {
        // connect(2) says "Connection refused" for a directory or a plain file.
        const char* what = S_ISDIR(info.st_mode)   ? "a directory"
                           : S_ISREG(info.st_mode) ? "a regular file"
                                                   : "a file of another kind";
        return path + " is " + what + ", not a socket";
    }
    switch (error) {
        case ENOENT:
            return "no such file (is pkitd running?)";
        case ECONNREFUSED:
            return "nothing listens on it (a socket left by a pkitd that ended?)";
        default:
            return std::strerror(error);
    }
}

}  // namespace pkit::proto
