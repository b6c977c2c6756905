// The HTTP endpoint's request parsing (SPEC §11), without a socket: requests split
// across any chunk boundaries, pipelining, keep-alive rules, and every refusal (400,
// 431, 413) as the status the connection answers before it closes.

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "daemon/shell/http/request_parser.hpp"

namespace pkit::shell::http {
namespace {

struct Fed {
    std::vector<Request> requests;
    std::optional<ParseError> error;
};

Fed feed_in_chunks(const std::string& bytes, std::size_t chunk) {
    RequestParser parser;
    Fed fed;
    for (std::size_t at = 0; at < bytes.size() && !fed.error; at += chunk) {
        fed.error = parser.feed(std::string_view(bytes).substr(at, chunk), fed.requests);
    }
    return fed;
}

TEST_CASE("http request parser: a GET split at every byte gives one request") {
    const std::string text = "GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\n";
    for (std::size_t chunk : {std::size_t{1}, std::size_t{3}, std::size_t{7}, text.size()}) {
        Fed fed = feed_in_chunks(text, chunk);
        CHECK_FALSE(fed.error);
        REQUIRE(fed.requests.size() == 1);
        CHECK(fed.requests[0] == Request{"GET", "/metrics", 1, 1, true});
    }
}

TEST_CASE("http request parser: pipelined requests come out in order with their keep-alive") {
    const std::string text =
        "GET /healthz HTTP/1.1\r\n\r\n"
        "HEAD /readyz HTTP/1.0\r\n\r\n"
        "GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
        "GET http://host:9/metrics HTTP/1.1\r\nConnection: close\r\n\r\n";
    Fed fed = feed_in_chunks(text, text.size());
    CHECK_FALSE(fed.error);
    REQUIRE(fed.requests.size() == 4);
    CHECK(fed.requests[0] == Request{"GET", "/healthz", 1, 1, true});
    CHECK(fed.requests[1] == Request{"HEAD", "/readyz", 1, 0, false});
    CHECK(fed.requests[2] == Request{"GET", "/a", 1, 0, true});
    CHECK(fed.requests[3] == Request{"GET", "/metrics", 1, 1, false});
}

TEST_CASE("http request parser: a body is read past, and a large one is refused with 413") {
    Fed small = feed_in_chunks(
        "POST /x HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloGET /y HTTP/1.1\r\n\r\n", 4);
    CHECK_FALSE(small.error);
    REQUIRE(small.requests.size() == 2);
    CHECK(small.requests[0].method == "POST");
    CHECK(small.requests[1].path == "/y");
    Fed big = feed_in_chunks(
        "POST /x HTTP/1.1\r\nContent-Length: 100000\r\n\r\n" + std::string(20000, 'a'), 4096);
    REQUIRE(big.error);
    CHECK(big.error->status == 413);
}

TEST_CASE("http request parser: a head over 8 KiB is 431, however it arrives") {
    const std::string head = "GET / HTTP/1.1\r\nX-Big: " + std::string(9 * 1024, 'a') + "\r\n\r\n";
    for (std::size_t chunk : {std::size_t{100}, std::size_t{8192}, head.size()}) {
        Fed fed = feed_in_chunks(head, chunk);
        REQUIRE(fed.error);
        CHECK(fed.error->status == 431);
        CHECK(fed.requests.empty());
    }
    // Just under the limit is fine.
    const std::string fits = "GET / HTTP/1.1\r\nX: " + std::string(8000, 'a') + "\r\n\r\n";
    Fed fed = feed_in_chunks(fits, 512);
    CHECK_FALSE(fed.error);
    CHECK(fed.requests.size() == 1);
    // An endless header line is refused once it passes the limit, not at its end.
    RequestParser parser;
    std::vector<Request> out;
    CHECK_FALSE(parser.feed("GET / HTTP/1.1\r\nX: ", out));
    std::optional<ParseError> error;
    for (int k = 0; k < 100 && !error; ++k) {
        error = parser.feed(std::string(1000, 'b'), out);
    }
    REQUIRE(error);
    CHECK(error->status == 431);
}

TEST_CASE("http request parser: garbage is 400, and stays an error") {
    for (const std::string& bad :
         {std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11),  // a TLS hello
          std::string("hello world\r\n\r\n"), std::string("GET / HTTP/9.9x\r\n\r\n"),
          std::string("GET / HTTP/1.1\r\nBad Header\r\n\r\n"),
          std::string("GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n")}) {
        RequestParser parser;
        std::vector<Request> out;
        auto error = parser.feed(bad, out);
        REQUIRE_MESSAGE(error, bad);
        CHECK(error->status == 400);
        auto again = parser.feed("GET / HTTP/1.1\r\n\r\n", out);
        CHECK(again == error);
        CHECK(out.empty());
    }
}

TEST_CASE("http request parser: an unknown method parses; the router answers it 405") {
    Fed fed = feed_in_chunks("DELETE /metrics HTTP/1.1\r\n\r\n", 5);
    CHECK_FALSE(fed.error);
    REQUIRE(fed.requests.size() == 1);
    CHECK(fed.requests[0].method == "DELETE");
}

TEST_CASE("http request parser: a version other than HTTP/1.0 and 1.1 is 505") {
    for (const char* version : {"HTTP/9.9", "HTTP/2.0", "HTTP/1.2", "HTTP/0.9"}) {
        RequestParser parser;
        std::vector<Request> out;
        auto error =
            parser.feed(std::string("GET /healthz ") + version + "\r\nHost: x\r\n\r\n", out);
        REQUIRE_MESSAGE(error, version);
        CHECK(error->status == 505);
        CHECK(out.empty());
    }
    for (const char* version : {"HTTP/1.0", "HTTP/1.1"}) {
        Fed fed = feed_in_chunks(std::string("GET /healthz ") + version + "\r\n\r\n", 3);
        CHECK_FALSE(fed.error);
        CHECK(fed.requests.size() == 1);
    }
}

TEST_CASE("http request parser: whitespace before a header's colon is 400") {
    for (const char* head :
         {"GET / HTTP/1.1\r\nHost : x\r\n\r\n", "GET / HTTP/1.1\r\nContent-Length  : 0\r\n\r\n",
          "GET / HTTP/1.1\r\nHost\t: x\r\n\r\n"}) {
        Fed fed = feed_in_chunks(head, 2);
        REQUIRE_MESSAGE(fed.error, head);
        CHECK(fed.error->status == 400);
        CHECK(fed.requests.empty());
    }
    Fed fine = feed_in_chunks("GET / HTTP/1.1\r\nHost:   x  \r\n\r\n", 2);
    CHECK_FALSE(fine.error);
    CHECK(fine.requests.size() == 1);
}

TEST_CASE("http request parser: max_requests stops after that many and says what it consumed") {
    const std::string first = "GET /a HTTP/1.1\r\n\r\n";
    const std::string bytes = first + "GET /b HTTP/1.1\r\n\r\nGET /c HT";
    RequestParser parser;
    std::vector<Request> out;
    CHECK_FALSE(parser.feed(bytes, out, 1));
    REQUIRE(out.size() == 1);
    CHECK(out[0].path == "/a");
    CHECK(parser.consumed() == first.size());
    std::string_view rest = std::string_view(bytes).substr(parser.consumed());
    CHECK_FALSE(parser.feed(rest, out, 1));
    REQUIRE(out.size() == 2);
    CHECK(out[1].path == "/b");
    rest.remove_prefix(parser.consumed());
    CHECK_FALSE(parser.feed(rest, out, 1));
    CHECK(parser.consumed() == rest.size());
    CHECK(parser.in_request());
    CHECK_FALSE(parser.feed("TP/1.1\r\n\r\n", out));
    REQUIRE(out.size() == 3);
    CHECK(out[2].path == "/c");
}

}  // namespace
}  // namespace pkit::shell::http
