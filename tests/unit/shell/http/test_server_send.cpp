// The HTTP Server on a real loop and real sockets: /metrics bodies go out by sendfile
// within a budget a turn; over it, a connection waits for the next turn, and every
// scraper still gets the whole body.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/unit/shell/shell_test.hpp"

#include "daemon/shell/http/server.hpp"

namespace pkit::shell::http {
namespace {

using test::TestLoop;

MetricsSnapshot snapshot_of(std::size_t services) {
    MetricsSnapshot snap;
    snap.version = "test";
    for (std::size_t i = 0; i < services; ++i) {
        MetricsRow row;
        row.labels = "{service=\"s" + std::to_string(i) + "\"";
        row.runs = 1;
        snap.rows.push_back(std::move(row));
    }
    return snap;
}

int connect_to(int port) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

TEST_CASE("http server: over the turn's sending budget a scrape waits a turn, and each is whole") {
    TestLoop loop;
    {
        Sources sources;
        sources.readiness = [] { return std::pair(true, std::string("{}")); };
        sources.metrics = [] { return snapshot_of(5'000); };  // a body of megabytes
        auto address = Server::numeric_address("127.0.0.1:0");
        REQUIRE(address);
        auto opened = Server::open_at(loop.get(), "127.0.0.1:0", *address, sources);
        REQUIRE(opened);
        Server& server = **opened;
        server.set_send_slice(0);  // one sendfile a turn
        sockaddr_in bound{};
        socklen_t length = sizeof bound;
        REQUIRE(::getsockname(server.listener_fd(), reinterpret_cast<sockaddr*>(&bound), &length) ==
                0);

        struct Scraper {
            int fd = -1;
            std::string got;
            bool ended = false;
        };
        std::vector<Scraper> scrapers(8);
        const std::string request = "GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n";
        for (Scraper& s : scrapers) {
            s.fd = connect_to(ntohs(bound.sin_port));
            REQUIRE(::send(s.fd, request.data(), request.size(), MSG_NOSIGNAL) ==
                    static_cast<ssize_t>(request.size()));
        }
        // All wait for one render and get it in one turn: seven sends wait at least once.
        REQUIRE(loop.run_until([&] {
            bool all = true;
            for (Scraper& s : scrapers) {
                char buffer[65536];
                ssize_t n = 0;
                while (!s.ended && (n = ::recv(s.fd, buffer, sizeof buffer, 0)) != -1) {
                    if (n == 0) {
                        s.ended = true;
                    } else {
                        s.got.append(buffer, static_cast<std::size_t>(n));
                    }
                }
                all = all && s.ended;
            }
            return all;
        }));
        CHECK(server.deferred() >= 7);
        for (Scraper& s : scrapers) {
            const std::size_t head_end = s.got.find("\r\n\r\n");
            REQUIRE(head_end != std::string::npos);
            const std::string body = s.got.substr(head_end + 4);
            CHECK(body.size() > 1024 * 1024);
            CHECK(s.got.find("Content-Length: " + std::to_string(body.size()) + "\r\n") < head_end);
            CHECK(body == scrapers.front().got.substr(scrapers.front().got.find("\r\n\r\n") + 4));
            CHECK(body.find("pkit_service_runs_total{service=\"s4999\"} 1\n") != std::string::npos);
            ::close(s.fd);
        }
    }
    CHECK(loop.close() == 0);
}

}  // namespace
}  // namespace pkit::shell::http
