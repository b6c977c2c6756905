// A service named twice in a request is one service: the parser merges duplicate names,
// keeping the order of first mention. And stream lines built in two pieces (a head per
// subscriber, a body shared by all) are the same bytes as the whole line.

#include "tests/unit/proto/proto_doctest.hpp"

#include <string>
#include <vector>

#include "proto/reply.hpp"
#include "proto/request.hpp"

using namespace pkit::proto;

TEST_CASE("duplicate names in services are merged, in order of first mention") {
    for (const char* cmd : {"start", "stop", "restart", "status"}) {
        auto parsed = parse_request(std::string(R"({"cmd":")") + cmd +
                                    R"(","services":["x","y","x","z","y","x"]})");
        REQUIRE(parsed.has_value());
        CHECK(parsed->services == std::vector<std::string>{"x", "y", "z"});
    }
    auto signal = parse_request(R"({"cmd":"signal","signal":"HUP","services":["a","a"]})");
    REQUIRE(signal.has_value());
    CHECK(signal->services == std::vector<std::string>{"a"});
}

TEST_CASE("a name repeated 140000 times parses into one name") {
    std::string line = R"({"id":1,"cmd":"status","services":[)";
    for (int k = 0; k < 140000; ++k) {
        line += k == 0 ? "\"web\"" : ",\"web\"";
    }
    line += "]}";
    auto parsed = parse_request(line);
    REQUIRE(parsed.has_value());
    CHECK(parsed->services == std::vector<std::string>{"web"});
}

TEST_CASE("a merged request round-trips through its wire line") {
    auto parsed = parse_request(R"({"id":3,"cmd":"restart","services":["b","a","b"]})");
    REQUIRE(parsed.has_value());
    auto line = request_line(*parsed);
    auto again = parse_request(line.substr(0, line.size() - 1));
    REQUIRE(again.has_value());
    CHECK(*again == *parsed);
}

TEST_CASE("a stream line's head and body are the whole line") {
    json event{{"type", "exited"}, {"service", "web"}, {"code", 1}};
    json line{{"stream", "stdout"}, {"text", "bad \xff byte"}, {"at", 1.5}};
    for (const json& id : {json(nullptr), json(7), json("ev"), json{{"k", {1, 2}}}}) {
        CHECK(event_head(id) + stream_body(event) == event_line(id, event));
        CHECK(log_head(id) + stream_body(line) == log_line(id, line));
        auto parsed = parse_reply(event_head(id) + stream_body(event));
        REQUIRE(parsed.has_value());
        CHECK(parsed->kind == Reply::Kind::event);
        CHECK(parsed->id == id);
        CHECK(parsed->body == event);
        auto logged = parse_reply(log_head(id) + stream_body(line));
        REQUIRE(logged.has_value());
        CHECK(logged->kind == Reply::Kind::line);
        CHECK(logged->id == id);
    }
}
