// The HTTP endpoint's bounds against clients on the open network (SPEC §11, pkitd(8)):
// unsent output per connection, the request head's deadline, one /metrics render
// shared by concurrent scrapers and sent from its sealed memfd, and the refusal of
// other HTTP versions and of whitespace before a header's colon. Seats, the lobby and
// eviction are test_http_seats.cpp's.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <sstream>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <thread>
#include <vector>

#include "tests/integration/harness.hpp"
#include "tests/integration/harness_proc.hpp"
#include "tests/integration/http_client.hpp"

using namespace pkit::itest;

namespace {

// A connection to 127.0.0.1:port with a small receive buffer, never read from.
int unread_connection(int port) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    int small = 4096;
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

// Whether the peer has closed `fd` (FIN or reset), without reading from it.
bool peer_closed(int fd) {
    pollfd p{fd, POLLRDHUP, 0};
    return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

// 1,000 services that never start, `idle@1`..`idle@1000`: a /metrics body of about
// 1 MB, more than the kernel holds for a connection.
void with_megabyte_of_metrics(const TempDir& dir) {
    dir.service("idle", "command = [\"/bin/true\"]\nautostart = false\ninstances = 1000\n");
}

// How many of `pid`'s descriptors are memfds named `name`.
int memfds_named(pid_t pid, const std::string& name) {
    int found = 0;
    std::error_code error;
    for (const auto& entry :
         std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", error)) {
        std::error_code link_error;
        auto target = std::filesystem::read_symlink(entry.path(), link_error).string();
        found += !link_error && target.starts_with("/memfd:" + name) ? 1 : 0;
    }
    return found;
}

// A /healthz asked on `c`: its reply's status, or 0 when none came within 5 s.
int healthz_on(HttpConnection& c) {
    if (!c.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")) {
        return 0;
    }
    auto reply = c.read_reply(5s);
    return reply ? reply->status : 0;
}

}  // namespace

TEST_CASE(
    "http limits: a /metrics body larger than the socket buffers reaches a slow reader whole, "
    "the request pipelined behind it is answered next, and the body is held in a memfd") {
    TempDir dir;
    int port = with_http(dir);
    // Its sending waits for the client again and again.
    with_megabyte_of_metrics(dir);
    Daemon pkitd(dir);
    pkitd.wait_ready();

    HttpConnection c(port, 4096);
    REQUIRE(
        c.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
               "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
    auto metrics = c.read_reply(30s);
    REQUIRE(metrics);
    CHECK(metrics->status == 200);
    INFO("body bytes: " << metrics->body.size());
    CHECK(metrics->body.size() > 600 * 1024);
    CHECK(metrics->header("content-length") == std::to_string(metrics->body.size()));
    // Every service, and the body ends where a complete exposition ends.
    for (int i = 1; i <= 1000; ++i) {
        const std::string line =
            "pkit_service_runs_total{service=\"idle@" + std::to_string(i) + "\"} 0\n";
        REQUIRE_MESSAGE(metrics->body.find(line) != std::string::npos, line);
    }
    CHECK(metrics->body.ends_with("\n"));
    auto health = c.read_reply(10s);
    REQUIRE(health);
    CHECK(health->status == 200);
    CHECK(c.closed_within(10s));

    // The body is held in a memfd, which pkitd keeps while the body is fresh. (That it
    // goes out by sendfile, within a budget a turn, is test_server_send's case.)
    CHECK(memfds_named(pkitd.target_pid(), "pkit-metrics") >= 1);
    CHECK(http_get(port, "/healthz").status == 200);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("http limits: a connection is handed to pkitd with its request, not before") {
    TempDir dir;
    int port = with_http(dir);
    Daemon pkitd(dir);
    pkitd.wait_ready();
    const pid_t pid = pkitd.target_pid();
    // Connected first, silent: with TCP_DEFER_ACCEPT the kernel keeps it until its
    // bytes come, so it takes no slot and cannot be evicted before its request.
    HttpConnection silent(port);
    // Served after it: were the silent one in the accept queue, pkitd would have
    // accepted it first.
    CHECK(http_get(port, "/healthz").status == 200);
    CHECK_FALSE(holds_peer_of(pid, silent.fd()));
    CHECK(healthz_on(silent) == 200);
    CHECK(holds_peer_of(pid, silent.fd()));
    CHECK(pkitd.stop() == 0);
}

TEST_CASE(
    "http limits: a client that pipelines scrapes and never reads is held at the output bound, "
    "then closed") {
    TempDir dir;
    int port = with_http(dir);
    // 100 services: a scrape of about 100 KB, so that answering even one read's worth
    // of pipelined requests (16 KiB, some 600 of them) would queue tens of megabytes.
    for (int i = 0; i < 100; ++i) {
        dir.service("web" + std::to_string(i), sh_command("exec sleep 1000"));
    }
    Daemon pkitd(dir);
    pkitd.wait_ready();
    const pid_t pid = pkitd.target_pid();
    REQUIRE(http_get(port, "/metrics").status == 200);
    auto rss_before = rss_kb(pid);
    REQUIRE(rss_before);

    int fd = unread_connection(port);
    std::string burst;
    for (int i = 0; i < 1000; ++i) {
        burst += "GET /metrics HTTP/1.1\r\n\r\n";
    }
    // Writes until the kernel's buffers are full: pkitd has stopped reading.
    std::size_t sent = 0;
    const auto start = Clock::now();
    bool full = false;
    while (!full && seconds_since(start) < 20.0) {
        ssize_t n = ::send(fd, burst.data(), burst.size(), MSG_NOSIGNAL);
        if (n > 0) {
            sent += static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && errno == EAGAIN) {
            pollfd p{fd, POLLOUT, 0};
            full = ::poll(&p, 1, 500) == 0;  // no room for half a second
        } else {
            break;
        }
    }
    CHECK(full);
    INFO("bytes of requests sent before pkitd stopped reading: " << sent);
    // Without a bound, pkitd answers everything it reads: tens of MB queued. With it,
    // about 1 MiB of replies, which share one body.
    auto rss = rss_kb(pid);
    REQUIRE(rss);
    CHECK(*rss - *rss_before < 16 * 1024);
    // Other clients are served meanwhile.
    CHECK(http_get(port, "/healthz").status == 200);
    Client client = pkitd.client();
    CHECK(client.command("ping")["ok"] == true);

    // It takes nothing for 10 s: closed then, not before.
    const auto held = Clock::now();
    wait_for([&] { return peer_closed(fd); }, 30s, "the unread connection closed");
    const double after = seconds_since(held);
    CHECK(after > 5.0);
    ::close(fd);
    CHECK(http_get(port, "/healthz").status == 200);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("http limits: a request head trickling in is closed 5 s after its first byte") {
    TempDir dir;
    int port = with_http(dir);
    Daemon pkitd(dir);
    pkitd.wait_ready();

    HttpConnection trickle(port);
    const std::string head = "GET /healthz HTTP/1.1\r\nX-Slow: " + std::string(200, 'a');
    const auto start = Clock::now();
    bool closed = false;
    // One byte every 250 ms: never idle, never complete, for up to 20 s.
    for (std::size_t i = 0; i < 80 && !closed; ++i) {
        if (!trickle.send(std::string(1, head[i % head.size()]))) {
            closed = true;
            break;
        }
        closed = trickle.closed_within(250ms);
    }
    const double after = seconds_since(start);
    CHECK(closed);
    CHECK(after > 4.0);
    CHECK(after < 9.0);
    CHECK(http_get(port, "/healthz").status == 200);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("http limits: scrapers at the same time get identical bodies from one render") {
    TempDir dir;
    int port = with_http(dir);
    // A crash loop: without a shared render, each scrape would show other run counts.
    dir.service("loop", sh_command("exit 3") + restart_table("always", "10ms", 1.0));
    dir.service("web", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "loop", run_at_least(5), 10s, "the loop runs a few times");

    bool compared = false;
    for (int attempt = 0; attempt < 5 && !compared; ++attempt) {
        const auto start = Clock::now();
        std::vector<std::unique_ptr<HttpConnection>> scrapers;
        for (int i = 0; i < 16; ++i) {
            scrapers.push_back(std::make_unique<HttpConnection>(port));
            REQUIRE(scrapers.back()->send("GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n"));
        }
        std::vector<std::string> bodies;
        for (auto& s : scrapers) {
            auto reply = s->read_reply(10s);
            REQUIRE(reply);
            REQUIRE(reply->status == 200);
            bodies.push_back(reply->body);
        }
        // A later scrape within the cache's second, after the loop has run again.
        wait_status(client, "loop", run_at_least(status(client, "loop")["run"].get<int>() + 2), 5s,
                    "two more runs");
        bodies.push_back(http_get(port, "/metrics").body);
        if (seconds_since(start) > 0.9) {
            MESSAGE("attempt " << attempt << " took " << seconds_since(start) << " s");
            continue;  // a slow machine outlived the cache: try again
        }
        compared = true;
        for (const std::string& body : bodies) {
            CHECK(body == bodies.front());
        }
    }
    CHECK(compared);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE(
    "http limits: a version other than HTTP/1.0 and 1.1 is 505, whitespace before a colon 400") {
    TempDir dir;
    int port = with_http(dir);
    Daemon pkitd(dir);
    pkitd.wait_ready();

    for (const char* version : {"HTTP/9.9", "HTTP/2.0", "HTTP/1.2"}) {
        HttpConnection c(port);
        REQUIRE(c.send(std::string("GET /healthz ") + version + "\r\nHost: x\r\n\r\n"));
        auto reply = c.read_reply();
        REQUIRE_MESSAGE(reply, version);
        CHECK(reply->status == 505);
        CHECK(c.closed_within(5s));
    }
    for (const char* head :
         {"GET /healthz HTTP/1.1\r\nHost : x\r\n\r\n",
          "GET /healthz HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n"}) {
        HttpConnection c(port);
        REQUIRE(c.send(head));
        auto reply = c.read_reply();
        REQUIRE_MESSAGE(reply, head);
        CHECK(reply->status == 400);
        CHECK(c.closed_within(5s));
    }
    CHECK(http_get(port, "/healthz").status == 200);
    CHECK(pkitd.stop() == 0);
}
