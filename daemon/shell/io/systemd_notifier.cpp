#include "daemon/shell/io/systemd_notifier.hpp"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <cstring>

#include "daemon/core/supervisor.hpp"

namespace pkit::shell {

namespace {

constexpr auto k_status_interval = std::chrono::seconds(1);

}  // namespace

SystemdNotifier::SystemdNotifier(uv_loop_t* loop, const SystemdEnvironment& environment)
    : m_watchdog(environment.watchdog), m_watchdog_timer(loop), m_status_timer(loop) {
    const std::string& path = environment.notify_socket;
    // An absolute path, or "@name" for the abstract namespace; anything else (vsock
    // addresses included) is not for a supervisor in a unit to handle.
    if (path.empty() || (path[0] != '/' && path[0] != '@') ||
        path.size() >= sizeof(m_address.sun_path)) {
        return;
    }
    m_address.sun_family = AF_UNIX;
    std::memcpy(m_address.sun_path, path.data(), path.size());
    if (path[0] == '@') {
        m_address.sun_path[0] = '\0';
    }
    m_address_length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size());
    m_fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    // The watchdog timer must not keep the loop running once everything has stopped.
    m_watchdog_timer.unref();
    m_status_timer.unref();
}

SystemdNotifier::~SystemdNotifier() {
    if (m_fd >= 0) {
        ::close(m_fd);
    }
}

void SystemdNotifier::send(std::string_view message) {
    if (m_fd < 0) {
        return;
    }
    // MSG_DONTWAIT: a full or vanished receiver costs a lost datagram, never a wait.
    (void)::sendto(m_fd, message.data(), message.size(), MSG_DONTWAIT | MSG_NOSIGNAL,
                   reinterpret_cast<const sockaddr*>(&m_address), m_address_length);
}

void SystemdNotifier::ready(const std::string& status) {
    if (!enabled()) {
        return;
    }
    m_ready = true;
    m_wanted_status = status;
    m_sent_status = status;
    m_status_sent_at = std::chrono::steady_clock::now();
    send("READY=1\nSTATUS=" + status);
    if (m_watchdog) {
        auto half = std::chrono::duration_cast<std::chrono::milliseconds>(*m_watchdog / 2);
        std::uint64_t period = std::max<std::int64_t>(half.count(), 1);
        send("WATCHDOG=1");
        m_watchdog_timer.start(
            period, [this] { send("WATCHDOG=1"); }, period);
    }
}

void SystemdNotifier::reloading() {
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    auto usec = static_cast<long long>(now.tv_sec) * 1000000 + now.tv_nsec / 1000;
    send("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(usec));
}

void SystemdNotifier::reloaded() {
    send("READY=1");
}

void SystemdNotifier::stopping() {
    m_status_timer.stop();
    send("STOPPING=1");
}

void SystemdNotifier::status(const std::string& summary) {
    if (!enabled() || !m_ready) {
        return;
    }
    m_wanted_status = summary;
    if (m_wanted_status == m_sent_status || m_status_timer.active()) {
        return;
    }
    auto since = std::chrono::steady_clock::now() - m_status_sent_at;
    if (since >= k_status_interval) {
        send_status();
        return;
    }
    auto wait = std::chrono::ceil<std::chrono::milliseconds>(k_status_interval - since);
    m_status_timer.start(static_cast<std::uint64_t>(wait.count()), [this] { send_status(); });
}

void SystemdNotifier::send_status() {
    if (m_wanted_status == m_sent_status) {
        return;
    }
    m_sent_status = m_wanted_status;
    m_status_sent_at = std::chrono::steady_clock::now();
    send("STATUS=" + m_sent_status);
}

}  // namespace pkit::shell

namespace pkit::shell {

std::string status_summary(const core::Supervisor& supervisor) {
    using core::State;
    constexpr std::array k_states{
        State::running,  State::backoff,     State::failed,  State::waiting, State::starting,
        State::stopping, State::storm_pause, State::stopped, State::done,    State::paused};
    std::array<std::size_t, k_states.size()> counts{};
    for (std::size_t i = 0; i < supervisor.size(); ++i) {
        if (supervisor.retired(i)) {
            continue;
        }
        State state = supervisor.service(i).state();
        for (std::size_t k = 0; k < k_states.size(); ++k) {
            counts[k] += k_states[k] == state ? 1 : 0;
        }
    }
    std::string text;
    for (std::size_t k = 0; k < k_states.size(); ++k) {
        // The first three always, so that "0 failed" is said; the rest when present.
        if (k < 3 || counts[k] > 0) {
            text += (text.empty() ? "" : ", ") + std::to_string(counts[k]) + " " +
                    std::string(core::to_string(k_states[k]));
        }
    }
    return text;
}

}  // namespace pkit::shell
