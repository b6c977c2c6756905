// tcp and http probes: non-blocking connects, names resolved off the loop, the status
// line judged, everything bounded by the attempt's timeout.

#include <unistd.h>

#include <csignal>

#include "daemon/shell/probes/probe_net.hpp"
#include "tests/unit/shell/probes/test_probe_support.hpp"

namespace pkit::shell::test {

using config::ProbeKind;

namespace {

std::string local(int port) {
    return "127.0.0.1:" + std::to_string(port);
}

std::string url(int port, const std::string& path = "/healthz") {
    return "http://127.0.0.1:" + std::to_string(port) + path;
}

}  // namespace

TEST_CASE("probe targets: host:port, [v6]:port and http URLs are split as sent") {
    auto tcp = parse_tcp_target("db.local:5432");
    REQUIRE(tcp);
    CHECK(tcp->host == "db.local");
    CHECK(tcp->port == "5432");
    auto v6 = parse_tcp_target("[::1]:80");
    REQUIRE(v6);
    CHECK(v6->host == "::1");
    CHECK_FALSE(parse_tcp_target("no-port"));
    CHECK_FALSE(parse_tcp_target("host:0"));

    auto http = parse_http_target("http://example.com:8080/a/b?x=1");
    REQUIRE(http);
    CHECK(http->net.host == "example.com");
    CHECK(http->net.port == "8080");
    CHECK(http->host_header == "example.com:8080");
    CHECK(http->path == "/a/b?x=1");
    auto bare = parse_http_target("http://[::1]");
    REQUIRE(bare);
    CHECK(bare->net.host == "::1");
    CHECK(bare->net.port == "80");
    CHECK(bare->path == "/");
    CHECK_FALSE(parse_http_target("https://example.com/"));
}

TEST_CASE("tcp probe: a listening port is healthy, a closed one is refused") {
    TestLoop loop;
    {
        HttpResponder server("HTTP/1.1 200 OK\r\n\r\n");
        ProbeHarness harness(loop);
        auto open = probe_of(ProbeKind::tcp, local(server.port()));
        auto closed = probe_of(ProbeKind::tcp, local(closed_port()));
        harness.run(open, 1);
        harness.run(closed, 2);
        REQUIRE(harness.wait_results(2));
        CHECK_FALSE(harness.called_inside_run);
        for (const auto& result : harness.results) {
            if (result.service == 1) {
                CHECK(result.ok);
                CHECK(result.detail == "connected to " + local(server.port()));
            } else {
                CHECK_FALSE(result.ok);
                CHECK(result.detail == "connection refused");
            }
        }
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("tcp probe: a host name is resolved without blocking and each address tried") {
    TestLoop loop;
    {
        HttpResponder server("HTTP/1.1 200 OK\r\n\r\n");
        ProbeHarness harness(loop);
        // localhost may resolve to ::1 first, where nothing listens: the probe goes on to
        // 127.0.0.1.
        auto probe = probe_of(ProbeKind::tcp, "localhost:" + std::to_string(server.port()));
        harness.run(probe);
        auto result = harness.single();
        CHECK(result.ok);
        auto unknown = probe_of(ProbeKind::tcp, "no-such-host.invalid:80");
        harness.results.clear();
        harness.run(unknown);
        auto failed = harness.single();
        CHECK_FALSE(failed.ok);
        CHECK(failed.detail.starts_with("cannot resolve no-such-host.invalid: "));
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("http probe: 200 and 301 are healthy, 503 is not; the request is a plain GET") {
    TestLoop loop;
    {
        HttpResponder ok("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        HttpResponder moved("HTTP/1.0 301 Moved Permanently\r\nLocation: /elsewhere\r\n\r\n");
        HttpResponder down("HTTP/1.1 503 Service Unavailable\r\n\r\n");
        ProbeHarness harness(loop);
        auto probe_ok = probe_of(ProbeKind::http, url(ok.port()));
        auto probe_moved = probe_of(ProbeKind::http, url(moved.port(), "/"));
        auto probe_down = probe_of(ProbeKind::http, url(down.port()));
        harness.run(probe_ok, 1);
        harness.run(probe_moved, 2);
        harness.run(probe_down, 3);
        REQUIRE(harness.wait_results(3));
        CHECK_FALSE(harness.called_inside_run);
        for (const auto& result : harness.results) {
            CAPTURE(result.service);
            CHECK(result.ok == (result.service != 3));
            CHECK(result.detail == (result.service == 1   ? "HTTP 200"
                                    : result.service == 2 ? "HTTP 301"
                                                          : "HTTP 503"));
        }
        CHECK(moved.accepted() == 1);  // the redirect was not followed
        CHECK(ok.last_request() ==
              "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(ok.port()) +
                  "\r\nConnection: close\r\nUser-Agent: pkit\r\n\r\n");
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("http probe: a server that never answers times out; garbage is not HTTP") {
    TestLoop loop;
    {
        HttpResponder silent("");
        HttpResponder garbage("SSH-2.0-OpenSSH\r\n");
        ProbeHarness harness(loop);
        auto probe_silent = probe_of(ProbeKind::http, url(silent.port()));
        auto probe_garbage = probe_of(ProbeKind::http, url(garbage.port()));
        harness.run(probe_silent, 1, nullptr, 200ms);
        harness.run(probe_garbage, 2);
        REQUIRE(harness.wait_results(2));
        for (const auto& result : harness.results) {
            CHECK_FALSE(result.ok);
            CHECK(result.detail ==
                  (result.service == 1 ? "timed out after 200ms" : "not an HTTP response"));
        }
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("100 concurrent http probes to a closed port do not block the loop") {
    TestLoop loop;
    {
        ProbeHarness harness(loop);
        int port = closed_port();
        auto numeric = probe_of(ProbeKind::http, url(port));
        auto named = probe_of(ProbeKind::http, "http://localhost:" + std::to_string(port) + "/");
        std::vector<std::chrono::steady_clock::time_point> ticks;
        Timer ticker(loop.get());
        ticker.start(
            10, [&] { ticks.push_back(std::chrono::steady_clock::now()); }, 10);
        // Let the ticker start before the burst.
        REQUIRE(loop.run_until([&] { return ticks.size() >= 2; }));
        for (std::size_t i = 0; i < 100; ++i) {
            harness.run(i % 2 == 0 ? numeric : named, i);
        }
        auto burst = std::chrono::steady_clock::now();
        REQUIRE(harness.wait_results(100));
        auto ticks_before = ticks.size();
        REQUIRE(loop.run_until([&] { return ticks.size() >= ticks_before + 3; }));
        ticker.stop();
        CHECK_FALSE(harness.called_inside_run);
        for (const auto& result : harness.results) {
            CHECK_FALSE(result.ok);
            CHECK(result.detail == "connection refused");
        }
        auto longest = std::chrono::steady_clock::duration::zero();
        for (std::size_t i = 1; i < ticks.size(); ++i) {
            if (ticks[i] >= burst) {
                longest = std::max(longest, ticks[i] - ticks[i - 1]);
            }
        }
        CHECK(longest < 200ms);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("http probe against python3 -m http.server, when python3 exists") {
    if (access("/usr/bin/python3", X_OK) != 0) {
        MESSAGE("skipped: /usr/bin/python3 is missing");
        return;
    }
    TestLoop loop;
    TempDir dir;
    dir.write("index.html", "hello");
    {
        ProbeHarness harness(loop);
        int port = closed_port();
        auto spec = make_spec({"/bin/sh", "-c",
                               "exec /usr/bin/python3 -m http.server --bind 127.0.0.1 " +
                                   std::to_string(port) + " >/dev/null 2>&1"});
        spec.process.edit().cwd = dir.path();
        auto server = launch(LaunchRequest{&spec, 1, {}});
        REQUIRE(server.has_value());
        close(server->stdout_fd);
        close(server->stderr_fd);
        // Probe until the server listens, as [ready] would.
        auto listening = probe_of(ProbeKind::tcp, local(port));
        bool up = false;
        for (int i = 0; i < 200 && !up; ++i) {
            harness.results.clear();
            harness.run(listening);
            REQUIRE(harness.wait_results(1));
            up = harness.results.front().ok;
            Timer pause(loop.get());
            bool waited = false;
            pause.start(50, [&] { waited = true; });
            loop.run_until([&] { return waited || up; });
        }
        REQUIRE(up);
        harness.results.clear();
        auto found = probe_of(ProbeKind::http, url(port, "/index.html"));
        auto missing = probe_of(ProbeKind::http, url(port, "/missing"));
        harness.run(found, 1);
        harness.run(missing, 2);
        REQUIRE(harness.wait_results(2));
        for (const auto& result : harness.results) {
            CHECK(result.ok == (result.service == 1));
            CHECK(result.detail == (result.service == 1 ? "HTTP 200" : "HTTP 404"));
        }
        kill(server->pid, SIGKILL);
        // The harness's reaper reaps it.
        CHECK(loop.run_until([&] { return group_gone(server->pid); }, 5s));
    }
    CHECK(loop.close() == 0);
}

}  // namespace pkit::shell::test
