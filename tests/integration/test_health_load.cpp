// Probes never block pkitd (SPEC §3): 100 services, each probed every second over HTTP
// at a port where nothing listens (or where nothing ever answers), and `status` keeps
// answering (each within a liveness deadline; the latency is a figure that
// bench/bench_load.cpp prints, scenarios probes-refused and probes-silent).

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

constexpr int k_services = 100;

// A TCP listener on 127.0.0.1 that never accepts: the kernel completes connections
// into its backlog, and nobody ever answers a request.
class SilentListener {
public:
    SilentListener() {
        m_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        REQUIRE(m_fd >= 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof addr;
        REQUIRE(::bind(m_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
        REQUIRE(::getsockname(m_fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
        m_port = ntohs(addr.sin_port);
    }
    ~SilentListener() { ::close(m_fd); }
    SilentListener(const SilentListener&) = delete;
    SilentListener& operator=(const SilentListener&) = delete;

    // Until then, nothing listens on the port (bound, not listening: refused).
    void listen() { REQUIRE(::listen(m_fd, 4096) == 0); }
    int port() const { return m_port; }

private:
    int m_fd = -1;
    int m_port = 0;
};

// Runs 100 services probed at `port` every second and samples `status` (the raw request
// answered within 5 s, pkitctl's whole run within 20 s, each with all 100 rows) for at
// least 5 s and 20 rounds; every service is probed at least `expected_failures` more
// times meanwhile.
void check_status_keeps_answering(const TempDir& dir, const SilentListener& port,
                                  int expected_failures) {
    const std::string url = "http://127.0.0.1:" + std::to_string(port.port()) + "/healthz";
    // failures is high enough that no run is killed while the case samples.
    for (int i = 0; i < k_services; ++i) {
        char name[16];
        std::snprintf(name, sizeof name, "probed%03d", i);
        dir.service(name, sh_command("exec sleep 1000") + "[health]\nhttp = " + toml_str(url) +
                              "\ninterval = \"1s\"\nfailures = 1000\n");
    }
    Daemon pkitd(dir);
    pkitd.wait_ready(20s);
    Client client = pkitd.client();
    wait_for(
        [&] {
            json reply = client.request({{"cmd", "status"}});
            const auto& services = reply["result"]["services"];
            return std::all_of(services.begin(), services.end(), [](const json& s) {
                return s["health"].is_object() && s["health"]["failures"].get<int>() >= 1;
            });
        },
        25s, "every service probed once");

    std::vector<int> first_failures;
    std::vector<int> last_failures;
    int rounds = 0;
    const auto start = Clock::now();
    while (rounds < 20 || Clock::now() - start < 5s) {
        // pkitd's own answer is bound below (5 s); pkitctl's whole run also counts its
        // fork, exec and start-up, which a loaded machine stretches past that.
        const auto ctl = run_ctl({"--socket", pkitd.socket(), "status"}, 20s);
        REQUIRE_MESSAGE(ctl.exit_code == 0, ctl.all());
        CHECK(ctl.out.find("probed099") != std::string::npos);
        json reply = client.request({{"cmd", "status"}}, 5s);
        REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
        REQUIRE(reply["result"]["services"].size() == k_services);
        last_failures.clear();
        for (const auto& s : reply["result"]["services"]) {
            last_failures.push_back(s["health"]["failures"].get<int>());
        }
        if (first_failures.empty()) {
            first_failures = last_failures;
        }
        ++rounds;
        std::this_thread::sleep_for(100ms);  // pacing between rounds, not an assertion
    }
    // Every service kept being probed meanwhile.
    int fewest = 1000;
    for (std::size_t i = 0; i < last_failures.size(); ++i) {
        fewest = std::min(fewest, last_failures[i] - first_failures[i]);
    }
    CHECK(fewest >= expected_failures);

    json s = status(client, "probed000");
    CHECK(s["state"] == "running");
    CHECK(s["liveness_kills"] == 0);
    CHECK(s["health"]["status"] == "unhealthy");
    CHECK(pkitd.stop() == 0);
}

}  // namespace

TEST_CASE("health probes never block: 100 refused http probes a second, status keeps answering") {
    TempDir dir;
    SilentListener port;  // bound, not listening: each connection is refused
    check_status_keeps_answering(dir, port, 3);
}

TEST_CASE(
    "health probes never block: 100 http probes to a silent listener, status keeps answering") {
    TempDir dir;
    SilentListener port;
    port.listen();
    // Each probe waits its 1 s timeout before the next interval: one failure in 2 s.
    check_status_keeps_answering(dir, port, 1);
}
