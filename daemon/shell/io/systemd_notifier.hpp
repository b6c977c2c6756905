#pragma once
// pkitd as a systemd `Type=notify` unit (SPEC §11 "Under systemd"): readiness, a
// one-line status, reloads, the shutdown and watchdog pings, sent as sd_notify
// datagrams to the socket systemd named in pkitd's own NOTIFY_SOCKET. Without one,
// every call does nothing. Sends never block: a datagram systemd cannot take is lost,
// as with sd_notify(3).

#include <sys/socket.h>
#include <sys/un.h>
#include <uv.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "daemon/shell/uv_handle.hpp"

namespace pkit::shell {

// What systemd put in pkitd's environment; main() takes it out so that no service
// inherits it.
struct SystemdEnvironment {
    std::string notify_socket;                          // NOTIFY_SOCKET, or empty
    std::optional<std::chrono::microseconds> watchdog;  // WATCHDOG_USEC, when meant for pkitd
};

class SystemdNotifier {
public:
    SystemdNotifier(uv_loop_t* loop, const SystemdEnvironment& environment);
    ~SystemdNotifier();

    SystemdNotifier(const SystemdNotifier&) = delete;
    SystemdNotifier& operator=(const SystemdNotifier&) = delete;

    bool enabled() const { return m_fd >= 0; }

    // READY=1 with the first STATUS=, and the watchdog pings start (every half
    // WATCHDOG_USEC, when systemd asked for them).
    void ready(const std::string& status);
    // RELOADING=1 (with MONOTONIC_USEC, as systemd's notify-reload wants), then
    // reloaded() sends READY=1 again, whatever the reload's outcome.
    void reloading();
    void reloaded();
    // STOPPING=1: pkitd is shutting down.
    void stopping();
    // STATUS=<summary> when it differs from the last one sent, at most once a second:
    // a change within the second is sent when the second is over (a timer armed only
    // then, so an idle pkitd is never woken by it).
    void status(const std::string& summary);

private:
    void send(std::string_view message);
    void send_status();

    int m_fd = -1;
    sockaddr_un m_address{};
    socklen_t m_address_length = 0;
    std::optional<std::chrono::microseconds> m_watchdog;
    Timer m_watchdog_timer;
    Timer m_status_timer;
    std::string m_sent_status;
    std::string m_wanted_status;
    std::chrono::steady_clock::time_point m_status_sent_at{};
    bool m_ready = false;
};

}  // namespace pkit::shell

namespace pkit::core {
class Supervisor;
}

namespace pkit::shell {

// The one-line STATUS= summary: "12 running, 1 backoff, 0 failed", then the count of
// every other state that has services ("2 starting, 1 stopped").
std::string status_summary(const core::Supervisor& supervisor);

}  // namespace pkit::shell
