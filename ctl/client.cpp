#include "ctl/client.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <sstream>

#include "ctl/common.hpp"

namespace pkit::ctl {
namespace {

// Set by the SIGINT/SIGTERM handler; the one piece of global state, as a signal
// handler can reach nothing else.
volatile std::sig_atomic_t g_interrupted = 0;

void on_interrupt(int) {
    g_interrupted = 1;
}

// What EACCES on connect means (SPEC §9's socket modes and credential check).
constexpr const char* k_who_may_connect =
    "only root, the user pkitd runs as, the users in control_users and the members of "
    "control_group (pkitd.toml) may use the control socket; see pkitd(8)";

// A reply larger than this is not from pkitd: refuse it rather than eat all memory.
constexpr std::size_t k_max_reply_bytes = std::size_t{1} << 30;

std::string errno_text(int error) {
    return std::strerror(error);
}

int milliseconds_until(std::chrono::steady_clock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    return left.count() < 0 ? 0 : static_cast<int>(std::min<long long>(left.count(), 1 << 30));
}

}  // namespace

void catch_interrupts() {
    struct sigaction action {};
    action.sa_handler = on_interrupt;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;  // no SA_RESTART: a blocked poll() returns EINTR at once
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
}

bool interrupted() {
    return g_interrupted != 0;
}

std::string seconds_text(std::chrono::milliseconds timeout) {
    std::ostringstream text;
    text << static_cast<double>(timeout.count()) / 1000.0 << "s";
    return text.str();
}

Client::Client(std::string path, std::chrono::milliseconds timeout)
    : m_path(std::move(path)), m_timeout(timeout) {
    auto fail = [&](const std::string& reason) {
        return CtlError(k_exit_unreachable,
                        "cannot connect to " + m_path + ": " + reason + " — is pkitd running?");
    };
    sockaddr_un address{};
    if (m_path.size() >= sizeof address.sun_path) {
        throw fail("the path is too long for a Unix socket");
    }
    m_fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (m_fd < 0) {
        throw fail(errno_text(errno));
    }
    // A Unix connect blocks only while pkitd's accept backlog is full; SO_SNDTIMEO
    // bounds that wait.
    timeval limit{static_cast<time_t>(timeout.count() / 1000),
                  static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
    ::setsockopt(m_fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, m_path.c_str(), m_path.size() + 1);
    if (::connect(m_fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        int error = errno;
        ::close(m_fd);
        m_fd = -1;
        if (error == EACCES) {
            throw CtlError(k_exit_unreachable, "cannot connect to " + m_path + ": " +
                                                   errno_text(error) + " — " + k_who_may_connect);
        }
        throw fail(errno_text(error));
    }
}

Client::~Client() {
    if (m_fd >= 0) {
        ::close(m_fd);
    }
}

void Client::send(const proto::Request& request) {
    std::string line = proto::request_line(request);
    std::size_t done = 0;
    while (done < line.size()) {
        ssize_t n = ::send(m_fd, line.data() + done, line.size() - done, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            throw CtlError(k_exit_unreachable,
                           "cannot send to " + m_path + ": " + errno_text(errno));
        }
        done += static_cast<std::size_t>(n);
    }
}

std::optional<std::string> Client::read_line(
    std::optional<std::chrono::steady_clock::time_point> deadline) {
    for (;;) {
        if (auto newline = m_buffer.find('\n'); newline != std::string::npos) {
            std::string line = m_buffer.substr(0, newline);
            m_buffer.erase(0, newline + 1);
            return line;
        }
        if (interrupted()) {
            return std::nullopt;
        }
        pollfd watched{m_fd, POLLIN, 0};
        int rc = ::poll(&watched, 1, deadline ? milliseconds_until(*deadline) : -1);
        if (rc < 0 && errno == EINTR) {
            continue;
        }
        if (rc == 0) {
            throw CtlError(k_exit_unreachable,
                           "no reply from " + m_path + " within " + seconds_text(m_timeout));
        }
        char chunk[65536];
        ssize_t n = ::recv(m_fd, chunk, sizeof chunk, 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            throw CtlError(k_exit_unreachable,
                           "cannot read from " + m_path + ": " + errno_text(errno));
        }
        if (n == 0) {
            return std::nullopt;
        }
        m_buffer.append(chunk, static_cast<std::size_t>(n));
        if (m_buffer.size() > k_max_reply_bytes) {
            throw CtlError(k_exit_unreachable, "the reply from " + m_path + " is too large");
        }
    }
}

std::optional<proto::Reply> Client::read(
    std::optional<std::chrono::steady_clock::time_point> deadline) {
    auto line = read_line(deadline);
    if (!line) {
        return std::nullopt;
    }
    auto reply = proto::parse_reply(*line);
    if (!reply) {
        throw CtlError(k_exit_unreachable,
                       "unexpected reply from " + m_path + ": " + reply.error());
    }
    return std::move(*reply);
}

proto::Reply Client::read_reply() {
    auto reply = read(std::chrono::steady_clock::now() + m_timeout);
    if (!reply) {
        if (interrupted()) {
            throw CtlError(k_exit_unreachable, "interrupted while waiting for " + m_path);
        }
        throw CtlError(k_exit_unreachable, m_path + " closed the connection without a reply");
    }
    return std::move(*reply);
}

}  // namespace pkit::ctl
