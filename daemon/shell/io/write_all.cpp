#include "daemon/shell/io/write_all.hpp"

#include <unistd.h>

#include <cerrno>

namespace pkit::shell {

std::size_t write_all(int fd, std::string_view text) {
    std::size_t written = 0;
    while (written < text.size()) {
        ssize_t n = ::write(fd, text.data() + written, text.size() - written);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        written += static_cast<std::size_t>(n);
    }
    return written;
}

}  // namespace pkit::shell
