// parse_request: the daemon's first contact with untrusted bytes. Every case here
// must come back as a value or an Error, never an exception or an abort.

#include "tests/unit/proto/proto_doctest.hpp"

#include <string>

#include "proto/request.hpp"

using pkit::proto::Command;
using pkit::proto::ErrorCode;
using pkit::proto::json;
using pkit::proto::parse_request;
using pkit::proto::Request;

namespace {

pkit::proto::Error parse_error(std::string_view line) {
    auto parsed = parse_request(line);
    REQUIRE_FALSE(parsed.has_value());
    return parsed.error();
}

}  // namespace

TEST_CASE("a minimal ping parses with a null id and defaults") {
    auto parsed = parse_request(R"({"cmd":"ping"})");
    REQUIRE(parsed.has_value());
    CHECK(parsed->cmd == Command::ping);
    CHECK(parsed->id.is_null());
    CHECK(parsed->lines == 100);
    CHECK_FALSE(parsed->all);
}

TEST_CASE("every command name parses, and unknown fields are ignored") {
    for (auto [name, command] :
         {std::pair{"ping", Command::ping}, std::pair{"status", Command::status},
          std::pair{"events", Command::events}, std::pair{"reload", Command::reload},
          std::pair{"reload_preview", Command::reload_preview},
          std::pair{"shutdown", Command::shutdown}}) {
        auto line = json{{"cmd", name}, {"id", 7}, {"extra", {1, 2}}}.dump();
        auto parsed = parse_request(line);
        REQUIRE(parsed.has_value());
        CHECK(parsed->cmd == command);
        CHECK(parsed->id == 7);
    }
}

TEST_CASE("an id of every JSON type is kept as is, also in errors") {
    for (const auto& id :
         {json(nullptr), json(true), json(-3), json(18446744073709551615ULL), json(2.5),
          json("abc"), json::array({1, "x"}), json::object({{"k", json::array()}})}) {
        auto ok = parse_request(json{{"id", id}, {"cmd", "ping"}}.dump());
        REQUIRE(ok.has_value());
        CHECK(ok->id == id);
        auto bad = parse_error(json{{"id", id}, {"cmd", "nope"}}.dump());
        CHECK(bad.code == ErrorCode::unknown_command);
        CHECK(bad.id == id);
    }
}

TEST_CASE("arguments are read for each command") {
    auto start = parse_request(R"({"cmd":"start","services":["a","b"]})");
    REQUIRE(start.has_value());
    CHECK(start->services == std::vector<std::string>{"a", "b"});

    auto stop_all = parse_request(R"({"cmd":"stop","all":true})");
    REQUIRE(stop_all.has_value());
    CHECK(stop_all->all);

    auto signal = parse_request(R"({"cmd":"signal","services":["a"],"signal":"HUP","group":true})");
    REQUIRE(signal.has_value());
    CHECK(signal->signal == "HUP");
    CHECK(signal->group);

    auto logs =
        parse_request(R"({"cmd":"logs","service":"web","lines":5,"previous":true,"follow":false})");
    REQUIRE(logs.has_value());
    CHECK(logs->service == "web");
    CHECK(logs->lines == 5);
    CHECK(logs->previous);
    CHECK_FALSE(logs->follow);

    auto status = parse_request(R"({"cmd":"status","services":null})");
    REQUIRE(status.has_value());
    CHECK(status->services.empty());
}

TEST_CASE("missing required arguments are bad requests naming the field") {
    CHECK(parse_error(R"({"cmd":"start"})").message.find("\"services\"") != std::string::npos);
    CHECK(parse_error(R"({"cmd":"restart","services":[]})").code == ErrorCode::bad_request);
    CHECK(parse_error(R"({"cmd":"stop","all":false})").code == ErrorCode::bad_request);
    CHECK(parse_error(R"({"cmd":"signal","services":["a"]})").message == "\"signal\" is required");
    CHECK(parse_error(R"({"cmd":"logs"})").message == "\"service\" is required");
    CHECK(parse_error(R"({"cmd":"explain","service":""})").message == "\"service\" is required");
    CHECK(parse_error(R"({"id":1})").message == "\"cmd\" is required");
}

TEST_CASE("wrong-typed fields are bad requests naming the field, with the id echoed") {
    auto services = parse_error(R"({"id":"x","cmd":"start","services":"web"})");
    CHECK(services.code == ErrorCode::bad_request);
    CHECK(services.message == "\"services\" must be an array of strings");
    CHECK(services.id == "x");
    CHECK(parse_error(R"({"cmd":"start","services":["a",1]})").message ==
          "\"services\" must be an array of strings");
    CHECK(parse_error(R"({"cmd":5})").message == "\"cmd\" must be a string");
    CHECK(parse_error(R"({"cmd":"stop","all":"yes"})").message == "\"all\" must be a boolean");
    CHECK(parse_error(R"({"cmd":"signal","services":["a"],"signal":9})").message ==
          "\"signal\" must be a string");
    CHECK(parse_error(R"({"cmd":"logs","service":"a","follow":1})").message ==
          "\"follow\" must be a boolean");
    for (auto lines : {"-1", "2.5", "\"10\"", "true", "[]"}) {
        auto line = std::string(R"({"cmd":"logs","service":"a","lines":)") + lines + "}";
        CHECK(parse_error(line).message == "\"lines\" must be a non-negative integer");
    }
}

TEST_CASE("huge line counts are clamped, huge numbers elsewhere are harmless") {
    auto logs = parse_request(R"({"cmd":"logs","service":"a","lines":99999999999})");
    REQUIRE(logs.has_value());
    CHECK(logs->lines == 2147483647);
    CHECK(parse_error(R"({"cmd":"logs","service":"a","lines":1e400})").code ==
          ErrorCode::bad_request);
    auto big_id = parse_request(R"({"cmd":"ping","id":123456789012345678901234567890})");
    REQUIRE(big_id.has_value());
    CHECK(big_id->id.is_number_float());
}

TEST_CASE("hostile input never aborts") {
    CHECK(parse_error("").code == ErrorCode::bad_request);
    CHECK(parse_error("   ").code == ErrorCode::bad_request);
    CHECK(parse_error("not json").message == "the request is not valid JSON");
    CHECK(parse_error("[1,2]").message == "the request must be a JSON object");
    CHECK(parse_error("\"ping\"").code == ErrorCode::bad_request);
    CHECK(parse_error("null").code == ErrorCode::bad_request);
    CHECK(parse_error("{\"cmd\":\"ping\"} trailing").code == ErrorCode::bad_request);
    CHECK(parse_error("{\"cmd\":\"p\xff\xfeng\"}").code == ErrorCode::bad_request);
    CHECK(parse_error(std::string("{\"cmd\":\"ping\0\"}", 15)).code == ErrorCode::bad_request);

    std::string deep_array(500000, '[');
    deep_array += std::string(500000, ']');
    CHECK(parse_error(deep_array).message == "the request is nested more than 64 levels deep");
    CHECK(parse_error(std::string(500000, '{')).code == ErrorCode::bad_request);
}

namespace {

// {"cmd":"ping","id":1,"x":[[...]]} with `arrays` arrays in "x", or objects.
std::string ping_holding(std::size_t levels, bool objects = false) {
    std::string line = R"({"cmd":"ping","id":1,"x":)";
    for (std::size_t i = 0; i < levels; ++i) {
        line += objects ? R"({"a":)" : "[";
    }
    line += "0";
    line += std::string(levels, objects ? '}' : ']');
    return line + "}";
}

}  // namespace

TEST_CASE("a request nested more than 64 deep is refused from its text, whatever the member") {
    static_assert(pkit::proto::k_max_request_depth == 64);  // protocol.inc says 64
    CHECK(parse_request(ping_holding(64)).has_value());
    CHECK(parse_request(ping_holding(64, true)).has_value());
    for (std::size_t levels : {65, 1000, 400000}) {
        CAPTURE(levels);
        for (bool objects : {false, true}) {
            auto error = parse_error(ping_holding(levels, objects));
            CHECK(error.code == ErrorCode::bad_request);
            CHECK(error.message == "the request is nested more than 64 levels deep");
            CHECK(error.id.is_null());  // not read: nothing of the line is
        }
    }
    // Unclosed, the same.
    CHECK(parse_error(R"({"cmd":"ping","x":)" + std::string(1000000, '[')).message ==
          "the request is nested more than 64 levels deep");
    // Brackets in strings, escaped quotes included, are text.
    const std::string brackets(1000, '[');
    auto quoted =
        parse_request(R"({"cmd":"ping","x":"\")" + brackets + R"(","id":")" + brackets + R"("})");
    REQUIRE(quoted.has_value());
    CHECK(quoted->id == brackets);
    // Many members side by side are not deep.
    std::string wide = R"({"cmd":"ping","x":[)";
    for (int i = 0; i < 10000; ++i) {
        wide += "[[]],";
    }
    CHECK(parse_request(wide + "0]}").has_value());
}

TEST_CASE("an id nested more than 64 deep is refused, and its reply has a null id") {
    // 64 arrays with a value inside: 65 levels of id, within the request's bound.
    std::string deep_id =
        R"({"cmd":"ping","id":)" + std::string(64, '[') + "1" + std::string(64, ']') + "}";
    auto deep = parse_error(deep_id);
    CHECK(deep.message == "\"id\" is nested too deeply");
    CHECK(deep.id.is_null());
    std::string fits =
        R"({"cmd":"ping","id":)" + std::string(63, '[') + "1" + std::string(63, ']') + "}";
    CHECK(parse_request(fits).has_value());
}

TEST_CASE("a long unknown command name is echoed shortened") {
    auto error = parse_error(json{{"cmd", std::string(10000, 'x')}}.dump());
    CHECK(error.code == ErrorCode::unknown_command);
    CHECK(error.message.size() < 100);
}

TEST_CASE("requests round-trip through to_json and parse_request") {
    std::vector<Request> requests{
        Request{.id = 1, .cmd = Command::ping},
        Request{.id = "s", .cmd = Command::status, .services = {"a"}},
        Request{.id = nullptr, .cmd = Command::restart, .all = true},
        Request{.id = 2, .cmd = Command::stop, .services = {"a", "b"}},
        Request{
            .id = 3, .cmd = Command::signal, .services = {"a"}, .signal = "SIGHUP", .group = true},
        Request{.id = 4,
                .cmd = Command::logs,
                .service = "web",
                .lines = 7,
                .previous = true,
                .follow = true},
        Request{.id = 5, .cmd = Command::explain, .service = "web"},
        Request{.id = 6, .cmd = Command::events},
        Request{.id = 7, .cmd = Command::reload},
        Request{.id = 8, .cmd = Command::shutdown},
        Request{.id = 9, .cmd = Command::reload, .no_block = true},
        Request{.id = 10, .cmd = Command::reload_preview},
    };
    for (const auto& request : requests) {
        auto line = pkit::proto::request_line(request);
        REQUIRE(line.back() == '\n');
        CHECK(line.find('\n') == line.size() - 1);
        auto parsed = parse_request(std::string_view(line).substr(0, line.size() - 1));
        REQUIRE(parsed.has_value());
        CHECK(*parsed == request);
    }
}

TEST_CASE("wait parses its condition and within, and refuses bad ones") {
    auto parsed = parse_request(R"({"cmd":"wait","services":["web"]})");
    REQUIRE(parsed.has_value());
    CHECK(parsed->cmd == Command::wait);
    CHECK(parsed->wait_for == "ready");
    CHECK(parsed->within == 60.0);

    parsed = parse_request(R"({"cmd":"wait","all":true,"for":"done","within":1.5})");
    REQUIRE(parsed.has_value());
    CHECK(parsed->wait_for == "done");
    CHECK(parsed->within == 1.5);

    CHECK(parse_error(R"({"cmd":"wait","services":["web"],"for":"up"})").message ==
          "\"for\" must be \"ready\", \"done\" or \"stopped\"");
    CHECK(parse_error(R"({"cmd":"wait","services":["web"],"within":-1})").code ==
          ErrorCode::bad_request);
    CHECK(parse_error(R"({"cmd":"wait","services":["web"],"within":"1s"})").code ==
          ErrorCode::bad_request);
    CHECK(parse_error(R"({"cmd":"wait"})").code == ErrorCode::bad_request);

    Request wait{.id = 9, .cmd = Command::wait, .services = {"a"}};
    wait.wait_for = "stopped";
    wait.within = 2.5;
    Request stop{.id = 10, .cmd = Command::stop, .services = {"a"}};
    stop.no_block = true;
    for (const auto& request : {wait, stop}) {
        auto line = pkit::proto::request_line(request);
        auto back = parse_request(std::string_view(line).substr(0, line.size() - 1));
        REQUIRE(back.has_value());
        CHECK(*back == request);
    }
}

TEST_CASE("pause and resume take services or all, and round-trip") {
    auto pause = parse_request(R"({"cmd":"pause","services":["web","api@2"]})");
    REQUIRE(pause.has_value());
    CHECK(pause->cmd == Command::pause);
    CHECK(pause->services == std::vector<std::string>{"web", "api@2"});
    auto resume = parse_request(R"({"cmd":"resume","all":true})");
    REQUIRE(resume.has_value());
    CHECK(resume->cmd == Command::resume);
    CHECK(resume->all);
    CHECK(parse_error(R"({"cmd":"pause"})").message.find("\"services\"") != std::string::npos);
    CHECK(parse_error(R"({"cmd":"resume","services":[]})").code == ErrorCode::bad_request);
    for (const Request& request : {Request{.id = 1, .cmd = Command::pause, .services = {"a"}},
                                   Request{.id = 2, .cmd = Command::resume, .all = true}}) {
        auto line = pkit::proto::request_line(request);
        auto parsed = parse_request(std::string_view(line).substr(0, line.size() - 1));
        REQUIRE(parsed.has_value());
        CHECK(*parsed == request);
    }
    CHECK(to_string(ErrorCode::unsupported) == "unsupported");
    CHECK(to_string(ErrorCode::not_running) == "not_running");
    CHECK(pkit::proto::error_code_from_string("not_running") == ErrorCode::not_running);
}

TEST_CASE("rotate takes services or none, logs a since, and both round-trip (SPEC §18)") {
    auto every = parse_request(R"({"cmd":"rotate"})");
    REQUIRE(every.has_value());
    CHECK(every->cmd == Command::rotate);
    CHECK(every->services.empty());
    auto some = parse_request(R"({"cmd":"rotate","services":["web","api@2"]})");
    REQUIRE(some.has_value());
    CHECK(some->services == std::vector<std::string>{"web", "api@2"});
    auto since = parse_request(R"({"cmd":"logs","service":"web","since":1700000000.25})");
    REQUIRE(since.has_value());
    CHECK(since->since == 1700000000.25);
    CHECK(parse_error(R"({"cmd":"logs","service":"web","since":"1h"})").message.find("\"since\"") !=
          std::string::npos);
    for (const Request& request :
         {Request{.id = 1, .cmd = Command::rotate, .services = {"a"}},
          Request{.id = 2, .cmd = Command::rotate},
          Request{.id = 3, .cmd = Command::logs, .service = "w", .lines = 5, .since = 1.5e9}}) {
        auto line = pkit::proto::request_line(request);
        auto parsed = parse_request(std::string_view(line).substr(0, line.size() - 1));
        REQUIRE(parsed.has_value());
        CHECK(*parsed == request);
    }
}
