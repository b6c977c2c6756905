#include "tests/integration/http_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "tests/integration/harness_doctest.hpp"
#include "tests/integration/harness_files.hpp"

namespace pkit::itest {

HttpConnection::HttpConnection(int port, int receive_buffer) {
    m_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(m_fd >= 0);
    if (receive_buffer > 0) {
        ::setsockopt(m_fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int rc = ::connect(m_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    REQUIRE_MESSAGE(rc == 0, "connect to 127.0.0.1:" << port << ": " << std::strerror(errno));
}

HttpConnection::~HttpConnection() {
    if (m_fd >= 0) {
        ::close(m_fd);
    }
}

bool HttpConnection::send(const std::string& bytes) {
    std::size_t sent = 0;
    while (sent < bytes.size()) {
        ssize_t n = ::send(m_fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return false;
        }
        sent += static_cast<std::size_t>(n);
    }
    return true;
}

bool HttpConnection::fill(std::chrono::steady_clock::time_point deadline) {
    if (m_eof) {
        return false;
    }
    for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            return false;
        }
        pollfd p{m_fd, POLLIN, 0};
        int rc = ::poll(&p, 1, static_cast<int>(left.count()));
        if (rc < 0 && errno == EINTR) {
            continue;
        }
        if (rc <= 0) {
            return false;
        }
        char buf[65536];
        ssize_t n = ::recv(m_fd, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            m_eof = true;
            return false;
        }
        m_buffer.append(buf, static_cast<std::size_t>(n));
        return true;
    }
}

std::optional<HttpReply> HttpConnection::read_reply(std::chrono::milliseconds timeout, bool head) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    std::size_t end;
    while ((end = m_buffer.find("\r\n\r\n")) == std::string::npos) {
        if (!fill(deadline)) {
            return std::nullopt;
        }
    }
    HttpReply reply;
    std::string head_text = m_buffer.substr(0, end);
    m_buffer.erase(0, end + 4);
    std::size_t line_end = head_text.find("\r\n");
    std::string status_line = head_text.substr(0, line_end);
    if (status_line.size() < 12 || !status_line.starts_with("HTTP/1.")) {
        return std::nullopt;
    }
    reply.status = std::stoi(status_line.substr(9, 3));
    std::size_t at = line_end == std::string::npos ? head_text.size() : line_end + 2;
    while (at < head_text.size()) {
        std::size_t next = head_text.find("\r\n", at);
        std::string line = head_text.substr(at, next - at);
        std::size_t colon = line.find(':');
        if (colon != std::string::npos) {
            std::string name = line.substr(0, colon);
            std::ranges::transform(name, name.begin(),
                                   [](unsigned char c) { return std::tolower(c); });
            std::string value = line.substr(colon + 1);
            value.erase(0, value.find_first_not_of(' '));
            reply.headers[name] = value;
        }
        at = next == std::string::npos ? head_text.size() : next + 2;
    }
    if (head) {
        return reply;
    }
    std::size_t length =
        std::stoul(reply.header("content-length").empty() ? "0" : reply.header("content-length"));
    while (m_buffer.size() < length) {
        if (!fill(deadline)) {
            return std::nullopt;
        }
    }
    reply.body = m_buffer.substr(0, length);
    m_buffer.erase(0, length);
    return reply;
}

bool HttpConnection::closed_within(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!m_eof) {
        if (!fill(deadline) && !m_eof) {
            return false;
        }
        m_buffer.clear();
    }
    return true;
}

HttpReply http_get(int port, const std::string& path, const std::string& method) {
    HttpConnection connection(port);
    REQUIRE(connection.send(method + " " + path +
                            " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"));
    auto reply = connection.read_reply(std::chrono::seconds(10), method == "HEAD");
    REQUIRE_MESSAGE(reply, "no response to " << method << " " << path);
    return *reply;
}

// Whether process `pid` holds the server side of the client connection `fd` (has
// accepted it): the socket /proc/net/tcp lists for the reversed address pair, by inode.
bool holds_peer_of(pid_t pid, int fd) {
    sockaddr_in local{};
    sockaddr_in remote{};
    socklen_t length = sizeof local;
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0);
    length = sizeof remote;
    REQUIRE(::getpeername(fd, reinterpret_cast<sockaddr*>(&remote), &length) == 0);
    // The kernel prints each address as its raw 32 bits and the port in host order.
    auto text = [](const sockaddr_in& a) {
        char out[16];
        std::snprintf(out, sizeof out, "%08X:%04X", a.sin_addr.s_addr, ntohs(a.sin_port));
        return std::string(out);
    };
    const std::string pair = text(remote) + " " + text(local);
    std::string inode;
    std::istringstream table(read_file("/proc/net/tcp"));
    for (std::string line; std::getline(table, line);) {
        std::istringstream fields(line);
        std::string slot, from, to, skip;
        fields >> slot >> from >> to;
        if (from + " " + to != pair) {
            continue;
        }
        for (int i = 0; i < 6; ++i) {
            fields >> skip;  // st, queues, timer, retransmits, uid, timeout
        }
        fields >> inode;
    }
    if (inode.empty() || inode == "0") {
        return false;  // still in the listener's backlog
    }
    std::error_code error;
    for (const auto& entry :
         std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", error)) {
        std::error_code link_error;
        if (std::filesystem::read_symlink(entry.path(), link_error).string() ==
            "socket:[" + inode + "]") {
            return true;
        }
    }
    return false;
}

}  // namespace pkit::itest
