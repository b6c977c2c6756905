// HTTP liveness probes (SPEC §2 [health], §3) against a real server run as the service
// itself (`python3 -m http.server`): 2xx is healthy, 404 is not, and a frozen server
// (SIGSTOP) times the probe out, so the run is killed (stop signal, then SIGCONT so it
// can act on it) and restarted.

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// The server as service "svc", ready once it accepts connections, probed at `path`.
void http_service(const TempDir& dir, const std::string& python, int port, const std::string& path,
                  const std::string& probe_settings) {
    const std::string host = "127.0.0.1:" + std::to_string(port);
    dir.service("svc",
                "command = " +
                    toml_array({python, "-m", "http.server", std::to_string(port), "--bind",
                                "127.0.0.1", "--directory", dir.str()}) +
                    "\n" + restart_table("on_crash", "100ms") + "[ready]\ntcp = " + toml_str(host) +
                    "\ntimeout = \"15s\"\n[health]\nhttp = " + toml_str("http://" + host + path) +
                    "\n" + probe_settings);
}

bool healthy(const json& s) {
    return s["health"].is_object() && s["health"]["status"] == "healthy";
}

}  // namespace

TEST_CASE("health http probe: a real server answering 200 is healthy, a 404 is killed") {
    const std::string python = python3();
    if (python.empty()) {
        PKIT_SKIP("python3 is not installed");
    }
    TempDir dir;
    const int port = unused_port();
    SUBCASE("200: healthy, the same PID over several probes") {
        http_service(dir, python, port, "/", "interval = \"200ms\"\nfailures = 2\n");
        Daemon pkitd(dir);
        pkitd.wait_ready();
        Client client = pkitd.client();
        json first = wait_status(client, "svc", healthy, 15s, "healthy");
        // The server logs each request on stderr: wait for 5 of them.
        wait_for(
            [&] {
                auto logs = client.request({{"cmd", "logs"}, {"service", "svc"}});
                return texts(logs["result"]).size() >= 5;
            },
            10s, "5 probe requests in the server's log");
        json s = status(client, "svc");
        CHECK(s["pid"] == first["pid"]);
        CHECK(s["liveness_kills"] == 0);
        CHECK(healthy(s));
        CHECK(pkitd.stop() == 0);
    }
    SUBCASE("404: unhealthy, killed by its liveness check") {
        http_service(dir, python, port, "/no-such-page", "interval = \"200ms\"\nfailures = 2\n");
        Daemon pkitd(dir);
        pkitd.wait_ready();
        Client client = pkitd.client();
        json s = wait_status(client, "svc", liveness_killed(1), 15s, "a liveness kill");
        CHECK(last_exit(s)["killed_by"] == "liveness");
        CHECK(pkitd.stop() == 0);
    }
}

TEST_CASE("health http probe: a server frozen by SIGSTOP is killed and restarted") {
    const std::string python = python3();
    if (python.empty()) {
        PKIT_SKIP("python3 is not installed");
    }
    TempDir dir;
    const int port = unused_port();
    http_service(dir, python, port, "/",
                 "interval = \"300ms\"\ntimeout = \"300ms\"\nfailures = 2\n"
                 "[stop]\ntimeout = \"8s\"\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json first = wait_status(client, "svc", healthy, 15s, "healthy");
    const pid_t frozen = first["pid"].get<pid_t>();

    const auto stopped_at = Clock::now();
    REQUIRE(::kill(frozen, SIGSTOP) == 0);
    json s = wait_status(client, "svc", liveness_killed(1), 10s, "a liveness kill");
    // SIGTERM alone stays pending on a stopped process: the SIGCONT after it is what
    // lets it die well before the 8 s stop timeout (else SIGKILL would end it).
    CHECK(last_exit(s)["killed_by"] == "liveness");
    CHECK(last_exit(s)["signal"] == "SIGTERM");
    CHECK(seconds_since(stopped_at) < 7.0);
    CHECK_FALSE(pid_alive(frozen));

    s = wait_status(
        client, "svc", [](const json& st) { return st["run"] == 2 && healthy(st); }, 15s,
        "run 2, healthy again");
    CHECK(s["restarts"] == 1);
    CHECK(s["pid"] != first["pid"]);
    CHECK(pkitd.stop() == 0);
}
