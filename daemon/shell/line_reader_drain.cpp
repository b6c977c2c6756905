// LineReader::drain, kept apart from the asynchronous read path it complements.

#include <unistd.h>

#include <cerrno>

#include "daemon/shell/line_reader.hpp"

namespace pkit::shell {

void LineReader::drain(std::size_t limit) {
    if (m_eof || !m_pipe.initialized()) {
        return;
    }
    uv_os_fd_t fd = -1;
    if (uv_fileno(m_pipe.as_handle(), &fd) != 0) {
        return;
    }
    char buffer[16 * 1024];
    std::size_t total = 0;
    while (total < limit) {
        ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n > 0) {
            total += static_cast<std::size_t>(n);
            if (!consume(buffer, static_cast<std::size_t>(n))) {
                return;  // a callback destroyed the reader
            }
            continue;
        }
        if (n == 0) {
            finish();  // may destroy the reader: touch nothing after it
            return;
        }
        if (errno == EINTR) {
            continue;
        }
        return;  // EAGAIN: everything written so far has been read
    }
}

}  // namespace pkit::shell
