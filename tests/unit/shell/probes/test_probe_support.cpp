#include "tests/unit/shell/probes/test_probe_support.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <fstream>

namespace pkit::shell::test {

ProbeHarness::ProbeHarness(TestLoop& test_loop)
    : loop(test_loop),
      runner(test_loop.get(),
             [this](std::size_t service, std::uint64_t run, core::ProbePurpose purpose, bool ok,
                    std::string detail) {
                 called_inside_run = called_inside_run || m_in_run;
                 results.push_back({service, run, purpose, ok, std::move(detail)});
             }),
      reaper(test_loop.get(),
             [this](pid_t pid, int status) { runner.on_child_exit(pid, status); }) {
    REQUIRE(become_subreaper_unless_pid1().has_value());
    REQUIRE(reaper.start().has_value());
    reaper.reap_now();
}

void ProbeHarness::run(const config::ProbeSpec& probe, std::size_t service,
                       const config::ServiceSpec* spec, config::Duration timeout) {
    m_in_run = true;
    runner.run(ProbeRequest{service, 1, core::ProbePurpose::health, &probe, spec, timeout});
    m_in_run = false;
}

bool ProbeHarness::wait_results(std::size_t count, std::chrono::milliseconds limit) {
    return loop.run_until([&] { return results.size() >= count && runner.unreaped() == 0; }, limit);
}

ProbeResult ProbeHarness::single() {
    CHECK(wait_results(1));
    REQUIRE(results.size() == 1);
    CHECK_FALSE(called_inside_run);
    return results.front();
}

config::ProbeSpec probe_of(config::ProbeKind kind, std::string target) {
    config::ProbeSpec probe;
    probe.kind = kind;
    probe.target = std::move(target);
    probe.interval = std::chrono::seconds(1);
    return probe;
}

config::ProbeSpec exec_probe(std::vector<std::string> argv) {
    config::ProbeSpec probe = probe_of(config::ProbeKind::exec, "");
    probe.argv = std::move(argv);
    return probe;
}

namespace {

// A socket bound to 127.0.0.1 on a port the kernel picks; returns the fd and port.
std::pair<int, int> bind_loopback() {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    socklen_t length = sizeof address;
    REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0);
    return {fd, ntohs(address.sin_port)};
}

}  // namespace

int closed_port() {
    auto [fd, port] = bind_loopback();
    close(fd);
    return port;
}

HttpResponder::HttpResponder(std::string response) : m_response(std::move(response)) {
    auto [fd, port] = bind_loopback();
    m_listen_fd = fd;
    m_port = port;
    REQUIRE(listen(m_listen_fd, 128) == 0);
    m_thread = std::thread([this] { serve(); });
}

HttpResponder::~HttpResponder() {
    m_stop = true;
    m_thread.join();
    close(m_listen_fd);
}

std::string HttpResponder::last_request() {
    return m_request_ready.load() ? m_last_request : std::string();
}

void HttpResponder::serve() {
    while (!m_stop.load()) {
        pollfd listening{m_listen_fd, POLLIN, 0};
        if (poll(&listening, 1, 20) <= 0) {
            continue;
        }
        int client = accept4(m_listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (client < 0) {
            continue;
        }
        ++m_accepted;
        std::string head;
        char chunk[512];
        while (head.find("\r\n\r\n") == std::string::npos && !m_stop.load()) {
            pollfd readable{client, POLLIN, 0};
            if (poll(&readable, 1, 20) <= 0) {
                continue;
            }
            ssize_t n = read(client, chunk, sizeof chunk);
            if (n <= 0) {
                break;
            }
            head.append(chunk, static_cast<std::size_t>(n));
        }
        if (!m_request_ready.load()) {
            m_last_request = head;
            m_request_ready = true;
        }
        if (m_response.empty()) {
            // Say nothing until told to stop: the probe must time out.
            while (!m_stop.load()) {
                pollfd idle{client, POLLIN, 0};
                poll(&idle, 1, 20);
            }
        } else {
            ssize_t ignored = send(client, m_response.data(), m_response.size(), MSG_NOSIGNAL);
            (void)ignored;
        }
        close(client);
    }
}

bool group_gone(pid_t pgid) {
    return kill(-pgid, 0) != 0 && errno == ESRCH;
}

pid_t read_pid(const std::string& file) {
    std::ifstream stream(file);
    pid_t pid = -1;
    if (!(stream >> pid)) {
        return -1;
    }
    return pid;
}

}  // namespace pkit::shell::test
