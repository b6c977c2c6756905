#include "ctl/client.hpp"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <sstream>

#include "ctl/common.hpp"
#include "proto/line_client.hpp"
#include "proto/socket_path.hpp"

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

Client::Client(std::string path, std::chrono::milliseconds timeout, std::string origin)
    : m_path(std::move(path)), m_timeout(timeout) {
    auto fd = proto::connect_unix(m_path, timeout);
    if (!fd) {
        const std::string tried =
            "cannot connect to " + m_path + (origin.empty() ? "" : " (" + origin + ")") + ": ";
        if (fd.error().code == EACCES) {
            throw CtlError(k_exit_unreachable,
                           tried + fd.error().text + " \u2014 " + k_who_may_connect);
        }
        const std::string reason = fd.error().code == 0
                                       ? fd.error().text
                                       : proto::connect_failure(m_path, fd.error().code);
        throw CtlError(k_exit_unreachable, tried + reason + "; " + proto::k_ctl_socket_hint);
    }
    m_fd = *fd;
}

Client::Client(const GlobalOptions& global, std::chrono::milliseconds timeout)
    : Client(socket_path(global), timeout, socket_origin(global)) {}

Client::~Client() {
    if (m_fd >= 0) {
        ::close(m_fd);
    }
}

void Client::send(const proto::Request& request) {
    if (auto sent = proto::send_all(m_fd, proto::request_line(request)); !sent) {
        throw CtlError(k_exit_unreachable, "cannot send to " + m_path + ": " + sent.error());
    }
}

std::optional<std::string> Client::read_line(
    std::optional<std::chrono::steady_clock::time_point> deadline) {
    auto read = proto::read_line(m_fd, m_buffer, deadline, &interrupted);
    switch (read.status) {
        case proto::LineRead::line:
            return std::move(read.text);
        case proto::LineRead::eof:
        case proto::LineRead::interrupted:
            return std::nullopt;
        case proto::LineRead::timeout:
            throw CtlError(k_exit_unreachable,
                           "no reply from " + m_path + " within " + seconds_text(m_timeout));
        case proto::LineRead::error:
            throw CtlError(k_exit_unreachable, "cannot read from " + m_path + ": " + read.text);
        case proto::LineRead::too_large:
            throw CtlError(k_exit_unreachable, "the reply from " + m_path + " is too large");
    }
    return std::nullopt;
}

std::optional<proto::Reply> Client::read(
    std::optional<std::chrono::steady_clock::time_point> deadline) {
    auto line = read_line(deadline);
    if (!line) {
        return std::nullopt;
    }
    return reply_of(*line);
}

proto::Reply Client::read_reply() {
    return reply_of(read_reply_line());
}

proto::Reply Client::reply_of(std::string_view line) const {
    auto reply = proto::parse_reply(line);
    if (!reply) {
        throw CtlError(k_exit_unreachable,
                       "unexpected reply from " + m_path + ": " + reply.error());
    }
    return std::move(*reply);
}

bool Client::readable_before(std::chrono::steady_clock::time_point deadline) {
    using namespace std::chrono;
    while (!has_line()) {
        if (interrupted()) {
            return true;  // read_reply() says so
        }
        const auto left = duration_cast<milliseconds>(deadline - steady_clock::now());
        if (left.count() <= 0) {
            return false;
        }
        pollfd wanted{.fd = m_fd, .events = POLLIN, .revents = 0};
        const int ready =
            ::poll(&wanted, 1, static_cast<int>(std::min<long long>(left.count() + 1, 60'000)));
        if (ready > 0) {
            return true;  // a line, the end or an error: read_reply() tells which
        }
        if (ready < 0 && errno != EINTR) {
            return true;
        }
    }
    return true;
}

void Client::set_reply_deadline(std::chrono::steady_clock::time_point deadline,
                                std::chrono::milliseconds shown) {
    m_reply_deadline = deadline;
    m_timeout = shown;
}

std::string Client::read_reply_line() {
    auto line = read_line(m_reply_deadline.value_or(std::chrono::steady_clock::now() + m_timeout));
    if (!line) {
        if (interrupted()) {
            throw CtlError(k_exit_unreachable, "interrupted while waiting for " + m_path);
        }
        throw CtlError(k_exit_unreachable, m_path + " closed the connection without a reply");
    }
    return std::move(*line);
}

}  // namespace pkit::ctl
