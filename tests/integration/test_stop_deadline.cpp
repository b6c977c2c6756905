// stop waits as long as the work takes (SPEC §10): without --timeout, pkitctl sizes
// its wait for the reply from the services' stop.timeout; --no-block returns once pkitd
// accepted the request. A stop answered promptly costs one request, not a `status`
// first (the proxy below counts what pkitctl asks).

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <thread>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// A service that ignores SIGTERM, with a stop.timeout of `timeout`.
void stubborn_service_toml(const TempDir& dir, const std::string& timeout) {
    dir.service("slow", sh_command("trap '' TERM; touch " + dir.file("armed") + "; sleep 1000") +
                            "[stop]\ntimeout = " + toml_str(timeout) + "\n");
}

// A Unix socket at `path` that passes each connection's request lines to pkitd's
// socket `target` and its replies back, one connection at a time, and records the
// `cmd` of every request. Stops at destruction.
class CountingProxy {
public:
    CountingProxy(std::string path, std::string target) : m_target(std::move(target)) {
        m_fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        REQUIRE(m_fd >= 0);
        sockaddr_un addr = address(path);
        REQUIRE(::bind(m_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
        REQUIRE(::listen(m_fd, 16) == 0);
        m_thread = std::thread([this] { serve(); });
    }
    ~CountingProxy() {
        ::shutdown(m_fd, SHUT_RDWR);  // ends the blocked accept()
        m_thread.join();
        ::close(m_fd);
    }
    CountingProxy(const CountingProxy&) = delete;
    CountingProxy& operator=(const CountingProxy&) = delete;

    std::vector<std::string> commands() {
        std::lock_guard lock(m_mutex);
        return m_commands;
    }

private:
    static sockaddr_un address(const std::string& path) {
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        REQUIRE(path.size() < sizeof addr.sun_path);
        std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
        return addr;
    }

    // One line from `fd` (without its newline); empty at the end of the connection.
    static std::string line_of(int fd) {
        std::string line;
        char c = 0;
        while (::read(fd, &c, 1) == 1 && c != '\n') {
            line += c;
        }
        return line;
    }

    static void write_all(int fd, const std::string& text) {
        for (std::size_t done = 0; done < text.size();) {
            const ssize_t wrote = ::write(fd, text.data() + done, text.size() - done);
            if (wrote <= 0) {
                return;
            }
            done += static_cast<std::size_t>(wrote);
        }
    }

    void serve() {
        for (;;) {
            const int client = ::accept4(m_fd, nullptr, nullptr, SOCK_CLOEXEC);
            if (client < 0) {
                return;
            }
            const int upstream = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
            sockaddr_un addr = address(m_target);
            if (::connect(upstream, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
                for (std::string request = line_of(client); !request.empty();
                     request = line_of(client)) {
                    json parsed = json::parse(request, nullptr, false);
                    {
                        std::lock_guard lock(m_mutex);
                        m_commands.push_back(parsed.is_object() ? parsed.value("cmd", "?") : "?");
                    }
                    write_all(upstream, request + "\n");
                    const std::string reply = line_of(upstream);
                    if (reply.empty()) {
                        break;
                    }
                    write_all(client, reply + "\n");
                }
            }
            ::close(upstream);
            ::close(client);
        }
    }

    std::string m_target;
    int m_fd = -1;
    std::mutex m_mutex;
    std::vector<std::string> m_commands;
    std::thread m_thread;
};

}  // namespace

TEST_CASE("pkitctl stop of a service with stop.timeout 15s succeeds after about 15 s") {
    TempDir dir;
    stubborn_service_toml(dir, "15s");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "slow", state_is("running"), 5s, "running");
    wait_file(dir.file("armed"));

    const auto start = Clock::now();
    const auto result = run_ctl({"--socket", pkitd.socket(), "stop", "slow"}, 60s);
    const double took = seconds_since(start);
    INFO(result.all());
    CHECK(result.exit_code == 0);
    CHECK(took >= 14.0);
    CHECK(took < 40.0);
    json s = status(client, "slow");
    CHECK(s["state"] == "stopped");
    CHECK(last_exit(s)["signal"] == "SIGKILL");
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("pkitctl stop --no-block returns before the service has stopped") {
    TempDir dir;
    stubborn_service_toml(dir, "3s");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "slow", state_is("running"), 5s, "running");
    wait_file(dir.file("armed"));

    const auto result =
        run_ctl({"--socket", pkitd.socket(), "--json", "stop", "--no-block", "slow"}, 60s);
    REQUIRE_MESSAGE(result.exit_code == 0, result.all());
    json rows = json::parse(result.out);
    CHECK(rows["services"][0]["state"] == "stopping");
    // The request was accepted: the stop goes on without pkitctl.
    CHECK(status(client, "slow")["state"] == "stopping");
    wait_status(client, "slow", state_is("stopped"), 10s, "the stop completes");
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("pkitctl stop answered at once asks pkitd nothing but the stop") {
    TempDir dir;
    dir.service("quick", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "quick", state_is("running"), 5s, "running");
    CountingProxy proxy(dir.file("proxy.sock"), pkitd.socket());

    const auto result = run_ctl({"--socket", dir.file("proxy.sock"), "stop", "quick"}, 60s);
    INFO(result.all());
    CHECK(result.exit_code == 0);
    CHECK(result.out.find("stopped") != std::string::npos);
    // One round trip: no `status` first to size the wait (that comes only when the
    // reply is late, as in the cases above).
    CHECK(proxy.commands() == std::vector<std::string>{"stop"});
    CHECK(status(client, "quick")["state"] == "stopped");

    // restart likewise.
    const auto restarted = run_ctl({"--socket", dir.file("proxy.sock"), "restart", "quick"}, 60s);
    CHECK_MESSAGE(restarted.exit_code == 0, restarted.all());
    CHECK(proxy.commands() == std::vector<std::string>{"stop", "restart"});
    CHECK(pkitd.stop() == 0);
}
