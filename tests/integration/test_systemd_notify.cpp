// pkitd under systemd as a Type=notify unit (SPEC §11 "Under systemd"): the datagrams
// pkitd sends to its own NOTIFY_SOCKET, read here from a socket the case binds, and
// the environment its services get (no NOTIFY_SOCKET or WATCHDOG_* of pkitd's).

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// A datagram socket standing in for systemd's notify socket.
class FakeSystemd {
public:
    explicit FakeSystemd(std::string path) : m_path(std::move(path)) {
        m_fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::strncpy(address.sun_path, m_path.c_str(), sizeof(address.sun_path) - 1);
        REQUIRE(::bind(m_fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
    }
    ~FakeSystemd() { ::close(m_fd); }
    FakeSystemd(const FakeSystemd&) = delete;
    FakeSystemd& operator=(const FakeSystemd&) = delete;

    std::string env() const { return "NOTIFY_SOCKET=" + m_path; }

    // The next message, or nullopt at the deadline.
    std::optional<std::string> next(Clock::time_point deadline) {
        for (;;) {
            auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
            if (left.count() <= 0) {
                return std::nullopt;
            }
            pollfd pfd{m_fd, POLLIN, 0};
            if (::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) {
                continue;
            }
            char buffer[4096];
            ssize_t n = ::recv(m_fd, buffer, sizeof(buffer), 0);
            if (n >= 0) {
                std::string message(buffer, static_cast<std::size_t>(n));
                m_seen.push_back(message);
                return message;
            }
        }
    }

    // Reads messages until one contains `needle`; fails the case at the deadline with
    // every message seen.
    std::string until(const std::string& needle, Duration timeout = 10s) {
        auto deadline = Clock::now() + timeout;
        while (auto message = next(deadline)) {
            if (message->find(needle) != std::string::npos) {
                return *message;
            }
        }
        std::string seen;
        for (const auto& m : m_seen) {
            seen += "[" + m + "] ";
        }
        FAIL("no notify message with " << needle << "; seen: " << seen);
        return {};
    }

    const std::vector<std::string>& seen() const { return m_seen; }

private:
    std::string m_path;
    int m_fd = -1;
    std::vector<std::string> m_seen;
};

// A shell fragment writing the run's environment to `path` whole: the file appears
// only once complete, so wait_file() never sees it half written.
std::string dump_env(const std::string& path) {
    return "env > " + path + ".tmp && mv " + path + ".tmp " + path;
}

bool notify_mentions(const std::vector<std::string>& messages, const std::string& needle) {
    for (const auto& m : messages) {
        if (m.find(needle) != std::string::npos) {
            return true;
        }
    }
    return false;
}

// The environment variables of a file written by `env`, one NAME a line.
std::string env_names(const std::string& path) {
    std::string names;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
        names += line.substr(0, line.find('=')) + "\n";
    }
    return names;
}

}  // namespace

TEST_CASE("under a NOTIFY_SOCKET pkitd reports ready, status, reload and stopping") {
    TempDir dir;
    FakeSystemd systemd(dir.file("systemd-notify.sock"));
    dir.service("plain", sh_command(dump_env(dir.file("plain.env")) + "; exec sleep 1000"));
    dir.service("notified", sh_command(dump_env(dir.file("notified.env")) + "; exec sleep 1000") +
                                "[ready]\nnotify = true\ntimeout = \"60s\"\n");
    dir.service("crasher", sh_command("sleep 0.2; exit 1") +
                               "autostart = false\n[restart]\npolicy = \"never\"\n");
    Daemon daemon(dir, {.env = {systemd.env()}});

    // READY=1 only once the control socket accepts: a connection right after it
    // must succeed without a retry.
    std::string ready = systemd.until("READY=1");
    auto client = Client::try_connect(daemon.socket());
    REQUIRE_MESSAGE(client.has_value(), "READY=1 came before the socket accepted");
    CHECK(client->command("ping")["ok"] == true);
    CHECK_MESSAGE(ready.find("STATUS=") != std::string::npos, ready);

    // The services got none of pkitd's own systemd variables; the notify service got
    // a socket of its own.
    wait_file(dir.file("plain.env"));
    wait_file(dir.file("notified.env"));
    std::string plain = env_names(dir.file("plain.env"));
    CHECK_MESSAGE(plain.find("NOTIFY_SOCKET\n") == std::string::npos, plain);
    CHECK_MESSAGE(plain.find("WATCHDOG_") == std::string::npos, plain);
    std::string notified = read_file(dir.file("notified.env"));
    CHECK_MESSAGE(notified.find("NOTIFY_SOCKET=") != std::string::npos, notified);
    CHECK_MESSAGE(
        notified.find("NOTIFY_SOCKET=" + dir.file("systemd-notify.sock")) == std::string::npos,
        notified);

    // A crash changes the summary.
    CHECK(client->request({{"cmd", "start"}, {"services", {"crasher"}}})["ok"] == true);
    std::string status = systemd.until("1 failed");
    CHECK_MESSAGE(status.rfind("STATUS=", 0) == 0, status);

    // A reload: RELOADING=1, then READY=1.
    CHECK(run_ctl({"--socket", daemon.socket(), "reload"}).exit_code == 0);
    systemd.until("RELOADING=1");
    systemd.until("READY=1");

    daemon.signal(SIGTERM);
    systemd.until("STOPPING=1");
    CHECK(daemon.wait_exit(15s) == 0);
    // No watchdog was asked for, so none was sent.
    CHECK_FALSE(notify_mentions(systemd.seen(), "WATCHDOG=1"));
}

TEST_CASE("with WATCHDOG_USEC pkitd pings the watchdog at half the period") {
    TempDir dir;
    FakeSystemd systemd(dir.file("systemd-notify.sock"));
    dir.service("plain", sh_command(dump_env(dir.file("plain.env")) + "; exec sleep 1000"));
    Daemon daemon(dir, {.env = {systemd.env(), "WATCHDOG_USEC=200000"}});
    systemd.until("READY=1");
    // Several pings; the period itself is a figure, not an assertion.
    for (int i = 0; i < 4; ++i) {
        systemd.until("WATCHDOG=1");
    }
    wait_file(dir.file("plain.env"));
    std::string plain = env_names(dir.file("plain.env"));
    CHECK_MESSAGE(plain.find("WATCHDOG_USEC") == std::string::npos, plain);
    CHECK_MESSAGE(plain.find("NOTIFY_SOCKET") == std::string::npos, plain);
}
