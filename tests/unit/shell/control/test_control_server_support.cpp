#include "tests/unit/shell/control/test_control_server_support.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "proto/reply.hpp"

namespace pkit::shell::test {

void FakeHandler::on_request(ConnectionId connection, proto::Request request) {
    ++requests;
    switch (request.cmd) {
        case proto::Command::status:
            held.push_back(connection);
            return;
        case proto::Command::explain:
            throw std::runtime_error("a handler bug");
        case proto::Command::events:
            server->start_stream(connection);
            streams.push_back(connection);
            server->reply(connection, proto::ok_reply(request.id, proto::json::object()));
            return;
        default: {
            proto::json result{{"pong", true}};
            if (ping_reply_bytes > 0) {
                result["pad"] = std::string(ping_reply_bytes, 'p');
            }
            server->reply(connection, proto::ok_reply(request.id, std::move(result)));
            return;
        }
    }
}

void FakeHandler::on_disconnect(ConnectionId connection) {
    disconnected.push_back(connection);
}

void FakeHandler::release_one() {
    REQUIRE(!held.empty());
    auto connection = held.front();
    held.erase(held.begin());
    server->reply(connection, proto::ok_reply(nullptr, {{"held", true}}));
}

std::unique_ptr<ControlServer> open_server(TestLoop& loop, const std::string& path,
                                           FakeHandler& handler, SocketOptions options) {
    options.path = path;
    auto opened = ControlServer::open(loop.get(), std::move(options), handler);
    REQUIRE_MESSAGE(opened.has_value(), (opened ? "" : opened.error()));
    handler.server = opened->get();
    return std::move(*opened);
}

RawClient::RawClient(TestLoop& loop, const std::string& path) : m_loop(loop) {
    m_fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    REQUIRE(m_fd >= 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
    // A full accept backlog answers EAGAIN: let the server accept, then try again.
    bool ok = loop.run_until([&] {
        // run_until asks once more after success: then the answer is EISCONN.
        if (::connect(m_fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 ||
            errno == EISCONN) {
            return true;
        }
        REQUIRE_MESSAGE(errno == EAGAIN, std::strerror(errno));
        return false;
    });
    REQUIRE(ok);
}

RawClient::~RawClient() {
    if (m_fd >= 0) {
        ::close(m_fd);
    }
}

bool RawClient::write(const std::string& bytes) {
    std::size_t done = 0;
    bool closed = false;
    m_loop.run_until([&] {
        while (done < bytes.size()) {
            ssize_t n = ::send(m_fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
            if (n < 0) {
                closed = errno != EAGAIN;
                return closed;
            }
            done += static_cast<std::size_t>(n);
        }
        return true;
    });
    return !closed && done == bytes.size();
}

void RawClient::shutdown_write() {
    ::shutdown(m_fd, SHUT_WR);
}

void RawClient::drain() {
    char buffer[65536];
    while (!m_eof) {
        ssize_t n = ::recv(m_fd, buffer, sizeof buffer, MSG_DONTWAIT);
        if (n > 0) {
            m_input.append(buffer, static_cast<std::size_t>(n));
        } else if (n == 0 || errno != EAGAIN) {
            m_eof = true;
        } else {
            return;
        }
    }
}

std::optional<std::string> RawClient::read_line(std::chrono::milliseconds limit) {
    m_loop.run_until(
        [&] {
            drain();
            return m_eof || m_input.find('\n') != std::string::npos;
        },
        limit);
    auto newline = m_input.find('\n');
    if (newline == std::string::npos) {
        return std::nullopt;
    }
    std::string line = m_input.substr(0, newline);
    m_input.erase(0, newline + 1);
    return line;
}

bool RawClient::wait_closed(std::chrono::milliseconds limit) {
    return m_loop.run_until(
        [&] {
            drain();
            m_input.clear();
            return m_eof;
        },
        limit);
}

bool RawClient::line_within(std::chrono::milliseconds limit) {
    return m_loop.run_until(
        [&] {
            drain();
            return m_input.find('\n') != std::string::npos;
        },
        limit);
}

proto::json parse_line(const std::string& line) {
    return proto::json::parse(line);
}

}  // namespace pkit::shell::test
