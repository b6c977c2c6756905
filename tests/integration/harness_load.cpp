#include "tests/integration/harness_load.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

namespace pkit::itest {

int connect_loopback(int port) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval timeout{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

bool get_ok(int port) {
    int fd = connect_loopback(port);
    std::string reply;
    if (fd >= 0) {
        const std::string request = "GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
        if (::write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
            char buf[512];
            ssize_t n = 0;
            while ((n = ::read(fd, buf, sizeof buf)) > 0) {
                reply.append(buf, static_cast<std::size_t>(n));
            }
        }
        ::close(fd);
    }
    return reply.starts_with("HTTP/1.") && reply.find(" 200 ") != std::string::npos &&
           reply.ends_with("\r\n\r\nok");
}

SteadyClient::SteadyClient(std::function<bool()> request) : m_request(std::move(request)) {
    m_thread = std::thread([this] {
        while (!m_stop) {
            (m_request() ? m_served : m_failed)++;
        }
    });
}

SteadyClient::~SteadyClient() {
    stop();
}

void SteadyClient::stop() {
    m_stop = true;
    if (m_thread.joinable()) {
        m_thread.join();
    }
}

}  // namespace pkit::itest
