// The HTTP endpoint (SPEC §11) through a real socket: the four paths, keep-alive and
// HTTP/1.0, HEAD, every refusal with its status, the idle bound, 64 connections at
// once with the longest idle evicted for a new one, and a port that cannot be bound.

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <regex>
#include <thread>
#include <vector>

#include "tests/integration/harness.hpp"
#include "tests/integration/http_client.hpp"

using namespace pkit::itest;

TEST_CASE("http endpoint: /healthz and /livez answer ok, unknown paths 404, other methods 405") {
    TempDir dir;
    int port = with_http(dir);
    dir.service("web", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();

    for (const char* path : {"/healthz", "/livez"}) {
        HttpReply reply = http_get(port, path);
        CHECK(reply.status == 200);
        CHECK(reply.body == "ok\n");
    }
    CHECK(http_get(port, "/nope").status == 404);
    CHECK(http_get(port, "/../../etc/passwd").status == 404);
    CHECK(http_get(port, "/metrics", "POST").status == 405);
    HttpReply del = http_get(port, "/healthz", "DELETE");
    CHECK(del.status == 405);
    CHECK(del.header("allow") == "GET, HEAD");
    // Every reply carries a Date (RFC 9110 IMF-fixdate), /metrics's too.
    const std::regex imf(
        "^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \\d\\d [A-Z][a-z]{2} \\d{4} "
        "\\d\\d:\\d\\d:\\d\\d GMT$");
    for (const char* path : {"/healthz", "/readyz", "/metrics", "/nope"}) {
        HttpReply reply = http_get(port, path);
        CHECK_MESSAGE(std::regex_match(reply.header("date"), imf), path, ": ",
                      reply.header("date"));
    }
    CHECK(std::regex_match(del.header("date"), imf));
    CHECK(pkitd.stop() == 0);
}

TEST_CASE(
    "http endpoint: /readyz turns 200 as the ready probe passes and 503 when the service crashes "
    "into backoff") {
    TempDir dir;
    int port = with_http(dir);
    const std::string flag = dir.file("ready-flag");
    const std::string crash = dir.file("crash");
    dir.service("app", sh_command("while [ ! -f " + crash + " ]; do sleep 0.05; done; rm -f " +
                                  crash + "; exit 1") +
                           restart_table("on_crash", "30s") + "[ready]\nfile = " + toml_str(flag) +
                           "\ninterval = \"50ms\"\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();

    HttpReply before = http_get(port, "/readyz");
    CHECK(before.status == 503);
    CHECK(before.header("content-type") == "application/json");
    json body = json::parse(before.body);
    CHECK(body["ready"] == false);
    CHECK(body["not_ready"][0]["name"] == "app");

    // The probe passes while the flag is newer than 2 × 50ms: kept fresh while waiting.
    HttpReply seen;
    wait_for(
        [&] {
            touch(flag);
            seen = http_get(port, "/readyz");
            return seen.status == 200;
        },
        10s, "/readyz 200 once the probe passes",
        [&] { return std::to_string(seen.status) + " " + seen.body; });
    CHECK(json::parse(http_get(port, "/readyz").body)["ready"] == true);

    write_file(crash, "");
    wait_for(
        [&] {
            seen = http_get(port, "/readyz");
            return seen.status == 503;
        },
        10s, "/readyz 503 after the crash",
        [&] { return std::to_string(seen.status) + " " + seen.body; });
    json after = json::parse(http_get(port, "/readyz").body);
    CHECK(after["not_ready"][0]["state"] == "backoff");
    CHECK(after["not_ready"][0]["reason"].get<std::string>().starts_with("backoff: restart 1 in"));
    CHECK(pkitd.stop() == 0);
}

TEST_CASE(
    "http endpoint: keep-alive serves two requests on one connection, HTTP/1.0 closes unless "
    "asked, HEAD has no body") {
    TempDir dir;
    int port = with_http(dir);
    dir.service("web", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    // The scrape below looks for web running: wait until it is.
    Client client = pkitd.client();
    wait_status(client, "web", state_is("running"), 10s, "web runs");

    {
        HttpConnection c(port);
        REQUIRE(c.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
        auto first = c.read_reply();
        REQUIRE(first);
        CHECK(first->status == 200);
        REQUIRE(c.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"));
        auto second = c.read_reply();
        REQUIRE(second);
        CHECK(second->status == 200);
        CHECK(second->header("content-type") == "text/plain; version=0.0.4");
        CHECK(second->body.find("pkit_service_state{service=\"web\",state=\"running\"} 1") !=
              std::string::npos);
        // Pipelined: both answers, in order.
        REQUIRE(c.send("GET /livez HTTP/1.1\r\n\r\nGET /nope HTTP/1.1\r\n\r\n"));
        CHECK(c.read_reply()->status == 200);
        CHECK(c.read_reply()->status == 404);
    }
    {
        HttpConnection c(port);
        REQUIRE(c.send("GET /healthz HTTP/1.0\r\n\r\n"));
        auto reply = c.read_reply();
        REQUIRE(reply);
        CHECK(reply->status == 200);
        CHECK(c.closed_within(5s));
    }
    {
        HttpConnection c(port);
        REQUIRE(c.send("GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
        auto reply = c.read_reply();
        REQUIRE(reply);
        CHECK(reply->header("connection") == "keep-alive");
        REQUIRE(c.send("GET /livez HTTP/1.0\r\n\r\n"));
        CHECK(c.read_reply()->status == 200);
        CHECK(c.closed_within(5s));
    }
    {
        std::size_t length = http_get(port, "/metrics").body.size();
        HttpConnection c(port);
        REQUIRE(c.send("HEAD /healthz HTTP/1.1\r\n\r\n"));
        auto head = c.read_reply(10s, true);
        REQUIRE(head);
        CHECK(head->status == 200);
        CHECK(head->header("content-length") == "3");
        // The next bytes are the next response, not a body.
        REQUIRE(c.send("HEAD /metrics HTTP/1.1\r\nConnection: close\r\n\r\n"));
        auto metrics = c.read_reply(10s, true);
        REQUIRE(metrics);
        CHECK(metrics->status == 200);
        CHECK(std::stoul(metrics->header("content-length")) > length / 2);
        CHECK(c.closed_within(5s));
    }
    CHECK(pkitd.stop() == 0);
}

TEST_CASE(
    "http endpoint: a 9 KiB header is 431 and garbage is 400, each closing its connection only") {
    TempDir dir;
    int port = with_http(dir);
    dir.service("web", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    const int pid =
        wait_status(client, "web", state_is("running"), 10s, "web runs")["pid"].get<int>();

    HttpConnection keeper(port);  // an innocent client, kept across the bad ones
    REQUIRE(keeper.send("GET /healthz HTTP/1.1\r\n\r\n"));
    REQUIRE(keeper.read_reply());

    {
        HttpConnection c(port);
        c.send("GET /healthz HTTP/1.1\r\nX-Big: " + std::string(9 * 1024, 'a') + "\r\n\r\n");
        auto reply = c.read_reply();
        REQUIRE(reply);
        CHECK(reply->status == 431);
        CHECK(c.closed_within(5s));
    }
    for (const std::string& garbage :
         {std::string("\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03", 11),
          std::string("hello\r\n\r\n"), std::string("GET / HTTP/1.1\r\nNo colon here\r\n\r\n"),
          std::string("GET /healthz HTTP/1.1\r\nContent-Length: x\r\n\r\n"),
          std::string("BREW /pot HTCPCP/1.0\r\n\r\n")}) {
        HttpConnection c(port);
        c.send(garbage);
        auto reply = c.read_reply();
        REQUIRE_MESSAGE(reply, "no reply to garbage");
        CHECK(reply->status == 400);
        CHECK(c.closed_within(5s));
    }
    {
        // A request cannot stop or change anything: only reads are served.
        for (const char* method : {"POST", "PUT", "DELETE"}) {
            CHECK(http_get(port, "/shutdown", method).status == 405);
        }
        CHECK(http_get(port, "/metrics/../../../proc/self/environ").status == 404);
    }
    REQUIRE(keeper.send("GET /livez HTTP/1.1\r\n\r\n"));
    auto still = keeper.read_reply();
    REQUIRE(still);
    CHECK(still->status == 200);
    CHECK(status(client, "web")["pid"] == pid);
    CHECK(client.command("ping")["ok"] == true);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE(
    "http endpoint: a client that sends nothing is dropped after 10 s while another is served "
    "at once") {
    TempDir dir;
    int port = with_http(dir);
    Daemon pkitd(dir);
    pkitd.wait_ready();

    HttpConnection silent(port);
    REQUIRE(silent.send("GET /healthz HTTP/1.1\r\n\r\n"));
    REQUIRE(silent.read_reply());  // accepted; now idle
    const auto start = Clock::now();
    HttpReply other = http_get(port, "/healthz");
    CHECK(other.status == 200);
    CHECK(seconds_since(start) < 5.0);  // liveness bound: served while the other idles
    CHECK(silent.closed_within(20s));
    const double after = seconds_since(start);
    CHECK(after > 8.0);  // not dropped early: 10 s of idleness
    CHECK(pkitd.stop() == 0);
}

TEST_CASE(
    "http endpoint: 200 connections at once are all answered, 64 at a time, and pkitd stays up") {
    TempDir dir;
    int port = with_http(dir);
    dir.service("web", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();

    std::vector<std::unique_ptr<HttpConnection>> connections;
    for (int i = 0; i < 200; ++i) {
        connections.push_back(std::make_unique<HttpConnection>(port));
        REQUIRE(connections.back()->send("GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n"));
    }
    int answered = 0;
    for (auto& c : connections) {
        auto reply = c->read_reply(30s);
        if (reply && reply->status == 200) {
            ++answered;
        }
    }
    CHECK(answered == 200);
    Client client = pkitd.client();
    CHECK(client.command("ping")["ok"] == true);
    CHECK(http_get(port, "/healthz").status == 200);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE(
    "http endpoint: at most 64 connections hold a seat at once: the 65th request that needs "
    "one takes the seat of the longest idle") {
    TempDir dir;
    int port = with_http(dir);
    Daemon pkitd(dir);
    pkitd.wait_ready();

    std::vector<std::unique_ptr<HttpConnection>> idle;
    for (int i = 0; i < 64; ++i) {
        idle.push_back(std::make_unique<HttpConnection>(port));
        REQUIRE(idle.back()->send("GET /readyz HTTP/1.1\r\n\r\n"));
        REQUIRE(idle.back()->read_reply());  // seated and kept open
    }
    HttpConnection newcomer(port);
    REQUIRE(newcomer.send("GET /readyz HTTP/1.1\r\n\r\n"));
    auto reply = newcomer.read_reply(10s);
    REQUIRE(reply);
    CHECK(reply->status == 200);
    CHECK(idle.front()->closed_within(5s));  // the longest idle gave its seat
    REQUIRE(idle.back()->send("GET /readyz HTTP/1.1\r\n\r\n"));
    CHECK(idle.back()->read_reply(5s));  // the others keep theirs
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("http endpoint: a listen address in use makes pkitd exit 3 naming the address") {
    TempDir dir;
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(fd, 1) == 0);
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    const std::string address = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
    dir.daemon_config("[http]\nlisten = \"" + address + "\"\n");
    dir.service("web", sh_command("exec sleep 1000"));
    CommandResult run = run_pkitd({"--config", dir.str(), "--socket", dir.file("pkitd.sock")});
    ::close(fd);
    CHECK(run.exit_code == 3);
    CHECK(run.err.find(address) != std::string::npos);
    CHECK(run.err.find("address already in use") != std::string::npos);
}

TEST_CASE("http endpoint: a reload applies a changed listen address") {
    TempDir dir;
    int port = with_http(dir);
    Daemon pkitd(dir);
    pkitd.wait_ready();
    CHECK(http_get(port, "/healthz").status == 200);
    int moved = unused_port();
    dir.daemon_config("[http]\nlisten = \"127.0.0.1:" + std::to_string(moved) + "\"\n");
    Client client = pkitd.client();
    CHECK(client.command("reload")["ok"] == true);
    CHECK(http_get(moved, "/healthz").status == 200);
    // The old address no longer accepts.
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0);
    ::close(fd);
    // Removing [http] closes it.
    dir.daemon_config("");
    CHECK(client.command("reload")["ok"] == true);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE(
    "http endpoint: a reload to a host name switches once it resolves; an unresolvable one "
    "keeps the old address") {
    TempDir dir;
    int port = with_http(dir);
    Daemon pkitd(dir);
    pkitd.wait_ready();
    // A name is resolved off the loop (uv_getaddrinfo): the switch follows the reload.
    int moved = unused_port();
    dir.daemon_config("[http]\nlisten = \"localhost:" + std::to_string(moved) + "\"\n");
    Client client = pkitd.client();
    CHECK(client.command("reload")["ok"] == true);
    // http_get fails the case on a refused connect: poll with a bare connect first.
    auto accepts = [](int at) {
        const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(static_cast<std::uint16_t>(at));
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
        ::close(fd);
        return ok;
    };
    wait_for([&] { return accepts(moved); }, 10s,
             "the endpoint accepting on localhost:" + std::to_string(moved),
             [&] { return pkitd.log(); });
    CHECK(http_get(moved, "/healthz").status == 200);
    CHECK(client.command("ping")["ok"] == true);
    // A name that does not resolve: logged, and the address before keeps serving.
    const std::string bad = "pkit-test-no-such-host.invalid";
    dir.daemon_config("[http]\nlisten = \"" + bad + ":" + std::to_string(port) + "\"\n");
    CHECK(client.command("reload")["ok"] == true);
    wait_for(
        [&] { return pkitd.log().find("cannot resolve \"" + bad + "\"") != std::string::npos; },
        30s, "the resolution error in the log", [&] { return pkitd.log(); });
    CHECK(pkitd.log().find("still serving on localhost:" + std::to_string(moved)) !=
          std::string::npos);
    CHECK(http_get(moved, "/healthz").status == 200);
    CHECK(pkitd.stop() == 0);
}
