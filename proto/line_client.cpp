#include "proto/line_client.hpp"

#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace pkit::proto {

namespace {

int milliseconds_until(std::chrono::steady_clock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    return left.count() < 0 ? 0 : static_cast<int>(std::min<long long>(left.count(), 1 << 30));
}

std::string errno_text(int error) {
    return std::strerror(error);
}

}  // namespace

std::expected<int, ConnectError> connect_unix(
    const std::string& path, std::optional<std::chrono::milliseconds> send_timeout) {
    sockaddr_un address{};
    if (path.size() >= sizeof address.sun_path) {
        return std::unexpected(ConnectError{0, "the path is too long for a Unix socket"});
    }
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        const int error = errno;
        return std::unexpected(ConnectError{error, errno_text(error)});
    }
    if (send_timeout) {
        timeval limit{static_cast<time_t>(send_timeout->count() / 1000),
                      static_cast<suseconds_t>(send_timeout->count() % 1000 * 1000)};
        ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
    }
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        const int error = errno;
        ::close(fd);
        return std::unexpected(ConnectError{error, errno_text(error)});
    }
    return fd;
}

std::expected<void, std::string> send_all(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return std::unexpected(errno_text(n < 0 ? errno : EPIPE));
        }
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return {};
}

LineResult read_line(int fd, std::string& buffer,
                     std::optional<std::chrono::steady_clock::time_point> deadline,
                     bool (*interrupted)(), std::size_t max_buffer) {
    // Bytes are received straight into the buffer's spare room (no bounce through a
    // stack chunk), and a line that is the whole buffer, as a reply usually is, is moved
    // out rather than copied: a status of 1,000 services is ~130 KB, and each page a copy
    // touches is a page fault, ~25 us on a VM.
    constexpr std::size_t k_chunk = 65536;
    std::size_t searched = 0;
    for (;;) {
        if (auto newline = buffer.find('\n', searched); newline != std::string::npos) {
            LineResult result{LineRead::line, {}};
            if (newline + 1 == buffer.size()) {
                result.text = std::move(buffer);
                result.text.pop_back();
                buffer.clear();
            } else {
                result.text = buffer.substr(0, newline);
                buffer.erase(0, newline + 1);
            }
            return result;
        }
        searched = buffer.size();
        if (interrupted != nullptr && interrupted()) {
            return {LineRead::interrupted, {}};
        }
        pollfd watched{fd, POLLIN, 0};
        const int ready = ::poll(&watched, 1, deadline ? milliseconds_until(*deadline) : -1);
        if (ready < 0 && errno == EINTR) {
            continue;
        }
        if (ready == 0) {
            return {LineRead::timeout, {}};
        }
        // Room for all that is queued, so that a long reply is received into one
        // allocation rather than copied as the buffer doubles.
        int queued = 0;
        if (::ioctl(fd, FIONREAD, &queued) != 0 || queued < 0) {
            queued = 0;
        }
        const std::size_t room = std::max(k_chunk, static_cast<std::size_t>(queued));
        ssize_t n = 0;
        const std::size_t before = buffer.size();
        buffer.resize_and_overwrite(before + room, [&](char* bytes, std::size_t) {
            n = ::recv(fd, bytes + before, room, 0);
            return before + static_cast<std::size_t>(std::max<ssize_t>(n, 0));
        });
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return {LineRead::error, errno_text(errno)};
        }
        if (n == 0) {
            return {LineRead::eof, {}};
        }
        if (buffer.size() > max_buffer) {
            return {LineRead::too_large, {}};
        }
    }
}

}  // namespace pkit::proto
