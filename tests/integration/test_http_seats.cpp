// The HTTP endpoint's seats and lobby (SPEC §11, pkitd(8) "seats, 64, and the lobby,
// 256"): a /metrics reply that a client reads, even with pauses of a second or more,
// is written whole however many more scrapers come; a liveness probe is answered while
// every seat is taken; a reader stalled for seconds still gives its seat to a request
// that needs one, and idle connections give theirs.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

#include "tests/integration/harness.hpp"
#include "tests/integration/http_client.hpp"

using namespace pkit::itest;

// Named: the integration cases are compiled as one unit (unity build).
namespace http_seats {

// 1,000 services that never start: a /metrics body of about 1 MB, more than the
// kernel's buffers of a connection hold.
void thousand_stopped_services(const TempDir& dir) {
    dir.service("idle", "command = [\"/bin/true\"]\nautostart = false\ninstances = 1000\n");
}

// A blocking connection to 127.0.0.1:port whose receive buffer is small (set before
// the connect), so that a megabyte reply waits in pkitd's socket for the client.
int small_window_connection(int port) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    int small = 4096;
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

// What one scraper saw: the bytes of its reply (head and body), and whether pkitd
// closed the connection after them.
struct Scrape {
    std::string bytes;
    bool ended = false;
    std::string error;
};

// Whether `scrape` is a 200 whose body is as long as its Content-Length says.
bool whole(const Scrape& scrape, std::string* why) {
    const std::size_t head_end = scrape.bytes.find("\r\n\r\n");
    if (!scrape.bytes.starts_with("HTTP/1.1 200") || head_end == std::string::npos) {
        *why = "no 200 head: " + scrape.bytes.substr(0, 80) + " " + scrape.error;
        return false;
    }
    const std::string head = scrape.bytes.substr(0, head_end);
    const std::size_t at = head.find("Content-Length: ");
    if (at == std::string::npos) {
        *why = "no Content-Length";
        return false;
    }
    const std::size_t length = std::stoul(head.substr(at + 16));
    const std::size_t body = scrape.bytes.size() - head_end - 4;
    if (body != length) {
        *why = "Content-Length " + std::to_string(length) + ", body " + std::to_string(body);
        return false;
    }
    return true;
}

// Reads from `fd` into `scrape` until `limit` bytes in all, its end, or `deadline`.
void read_up_to(int fd, Scrape& scrape, std::size_t limit, Clock::time_point deadline) {
    char buffer[16384];
    while (!scrape.ended && scrape.bytes.size() < limit && Clock::now() < deadline) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) {
            continue;
        }
        const std::size_t want = std::min(sizeof buffer, limit - scrape.bytes.size());
        ssize_t n = ::recv(fd, buffer, want, 0);
        if (n < 0) {
            scrape.error = std::strerror(errno);
            scrape.ended = true;  // reset by pkitd
        } else if (n == 0) {
            scrape.ended = true;
        } else {
            scrape.bytes.append(buffer, static_cast<std::size_t>(n));
        }
    }
}

// A connection that asks for /readyz once and keeps its seat, idle (keep-alive).
std::unique_ptr<HttpConnection> seated_idle(int port) {
    auto c = std::make_unique<HttpConnection>(port);
    REQUIRE(c->send("GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n"));
    auto reply = c->read_reply(10s);
    REQUIRE(reply);
    REQUIRE(reply->status == 200);
    return c;
}

}  // namespace http_seats

using namespace http_seats;

TEST_CASE(
    "http seats: 80 scrapers that pause a second and a half while reading all get whole "
    "bodies, and /healthz is answered while every seat is taken") {
    TempDir dir;
    int port = with_http(dir);
    thousand_stopped_services(dir);
    Daemon pkitd(dir);
    pkitd.wait_ready();

    // Each scraper: asks, waits for its reply to begin (it has a seat), reads 16 KiB,
    // waits for the probe below, pauses 1.5 s, then reads to the end. Those beyond the
    // 64 seats wait for one; a seat frees only when a reply is whole.
    constexpr int k_scrapers = 80;
    std::vector<Scrape> scrapes(k_scrapers);
    std::atomic<int> started{0};
    std::atomic<int> finished{0};
    std::atomic<bool> probed{false};
    std::vector<std::thread> threads;
    const auto deadline = Clock::now() + 120s;
    for (int i = 0; i < k_scrapers; ++i) {
        threads.emplace_back([&, i] {
            Scrape& scrape = scrapes[static_cast<std::size_t>(i)];
            int fd = small_window_connection(port);
            if (fd < 0) {
                scrape.error = "no connection";
                ++finished;
                return;
            }
            const std::string request = "GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n";
            if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
                static_cast<ssize_t>(request.size())) {
                scrape.error = "send failed";
            }
            read_up_to(fd, scrape, 1, deadline);
            ++started;
            read_up_to(fd, scrape, 16 * 1024, deadline);
            while (!probed && Clock::now() < deadline) {
                std::this_thread::sleep_for(10ms);
            }
            std::this_thread::sleep_for(1500ms);
            read_up_to(fd, scrape, SIZE_MAX, deadline);
            ::close(fd);
            ++finished;
        });
    }
    // Every seat holds a reply being read.
    wait_for([&] { return started >= 64; }, 60s, "64 replies under way");
    const int finished_before = finished;
    const HttpReply probe = http_get(port, "/healthz");
    const int finished_after = finished;
    probed = true;
    for (std::thread& t : threads) {
        t.join();
    }
    CHECK(probe.status == 200);
    // Answered before any scraper's seat was free.
    CHECK(finished_before == 0);
    CHECK(finished_after == 0);
    int cut = 0;
    for (int i = 0; i < k_scrapers; ++i) {
        std::string why;
        if (!whole(scrapes[static_cast<std::size_t>(i)], &why)) {
            ++cut;
            MESSAGE("scraper " << i << ": " << why);
        }
    }
    CHECK(cut == 0);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE(
    "http seats: with every seat held by a client that reads nothing, a /readyz takes the "
    "seat of one stalled for seconds, and a silent connection in the lobby stays") {
    TempDir dir;
    int port = with_http(dir);
    thousand_stopped_services(dir);
    Daemon pkitd(dir);
    pkitd.wait_ready();

    std::vector<int> held;
    for (int i = 0; i < 64; ++i) {
        held.push_back(small_window_connection(port));
        REQUIRE(held.back() >= 0);
        const std::string request = "GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n";
        REQUIRE(::send(held.back(), request.data(), request.size(), MSG_NOSIGNAL) > 0);
        pollfd p{held.back(), POLLIN, 0};
        REQUIRE(::poll(&p, 1, 10'000) == 1);  // its reply is on its way: it has a seat
    }
    const pid_t pid = pkitd.target_pid();
    auto evicted = [&] {
        int gone = 0;
        for (int fd : held) {
            gone += holds_peer_of(pid, fd) ? 0 : 1;
        }
        return gone;
    };
    // Probes from fresh connections are answered at once, and take no seat.
    for (int i = 0; i < 3; ++i) {
        CHECK(http_get(port, "/livez").status == 200);
    }
    CHECK(evicted() == 0);
    // A connection that sends nothing: in the lobby, where nobody needs its place.
    HttpConnection silent(port);
    // A request that needs a seat: it waits until one of the held clients has taken
    // nothing for seconds, then takes its seat (before their 10 s limit frees them all).
    HttpConnection ready(port);
    const auto asked = Clock::now();
    REQUIRE(ready.send("GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
    auto reply = ready.read_reply(30s);
    const double waited = seconds_since(asked);
    REQUIRE(reply);
    CHECK(reply->status == 200);
    MESSAGE("the /readyz waited " << waited << " s for a seat");
    // Exactly one was closed for it (not all 64 by their 10 s limit): the others keep
    // their seats.
    CHECK(evicted() == 1);
    wait_for([&] { return holds_peer_of(pid, silent.fd()); }, 10s,
             "the silent connection accepted (TCP_DEFER_ACCEPT hands it over late)");
    REQUIRE(silent.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
    auto answered = silent.read_reply(5s);
    REQUIRE(answered);
    CHECK(answered->status == 200);
    for (int fd : held) {
        ::close(fd);
    }
    CHECK(pkitd.stop() == 0);
}

TEST_CASE(
    "http seats: with every seat held by idle or trickling clients, each request that needs "
    "one evicts the oldest; probes take none") {
    TempDir dir;
    int port = with_http(dir);
    Daemon pkitd(dir);
    pkitd.wait_ready();

    std::vector<std::unique_ptr<HttpConnection>> held;
    for (int i = 0; i < 64; ++i) {
        held.push_back(seated_idle(port));
        if (i % 2 == 1) {
            REQUIRE(held.back()->send("GET /readyz HTTP/1.1\r\nX-Half: "));  // trickling
        }
        std::this_thread::sleep_for(5ms);
    }
    // Probes on connections of their own, kept open: they take no seat, so nobody is
    // evicted for them.
    std::vector<std::unique_ptr<HttpConnection>> probes;
    for (int i = 0; i < 8; ++i) {
        probes.push_back(std::make_unique<HttpConnection>(port));
        REQUIRE(probes.back()->send("GET /healthz HTTP/1.1\r\n\r\n"));
        auto reply = probes.back()->read_reply(5s);
        REQUIRE(reply);
        CHECK(reply->status == 200);
    }
    CHECK_FALSE(held[0]->closed_within(200ms));
    // Three requests that need a seat, each kept open: each takes the oldest's.
    std::vector<std::unique_ptr<HttpConnection>> newcomers;
    for (int round = 0; round < 3; ++round) {
        newcomers.push_back(seated_idle(port));
    }
    CHECK(held[0]->closed_within(5s));
    CHECK(held[1]->closed_within(5s));
    CHECK(held[2]->closed_within(5s));
    // The newest are still served, on their seats.
    REQUIRE(held[62]->send("GET /readyz HTTP/1.1\r\n\r\n"));
    auto kept = held[62]->read_reply(5s);
    REQUIRE(kept);
    CHECK(kept->status == 200);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE(
    "http seats: a full lobby of idle connections makes room for a newcomer by closing the "
    "oldest") {
    TempDir dir;
    int port = with_http(dir);
    Daemon pkitd(dir);
    pkitd.wait_ready();

    // 256 connections that asked a probe and stay open, idle: the lobby is full.
    std::vector<std::unique_ptr<HttpConnection>> idle;
    for (int i = 0; i < 256; ++i) {
        idle.push_back(std::make_unique<HttpConnection>(port));
        REQUIRE(idle.back()->send("GET /livez HTTP/1.1\r\n\r\n"));
        REQUIRE(idle.back()->read_reply(5s));
    }
    std::this_thread::sleep_for(5ms);
    // Two newcomers, kept open: each takes the place of the one idle the longest.
    std::vector<std::unique_ptr<HttpConnection>> newcomers;
    for (int round = 0; round < 2; ++round) {
        newcomers.push_back(std::make_unique<HttpConnection>(port));
        REQUIRE(newcomers.back()->send("GET /healthz HTTP/1.1\r\n\r\n"));
        auto reply = newcomers.back()->read_reply(5s);
        REQUIRE(reply);
        CHECK(reply->status == 200);
    }
    CHECK(idle[0]->closed_within(5s));
    CHECK(idle[1]->closed_within(5s));
    CHECK_FALSE(idle[2]->closed_within(200ms));
    REQUIRE(idle[255]->send("GET /livez HTTP/1.1\r\n\r\n"));
    auto kept = idle[255]->read_reply(5s);
    REQUIRE(kept);
    CHECK(kept->status == 200);
    CHECK(pkitd.stop() == 0);
}
