// Reply and stream lines: one compact JSON object a line, the id echoed, and a client
// parser that sorts them by kind.

#include "tests/unit/proto/proto_doctest.hpp"

#include "proto/reply.hpp"
#include "proto/status.hpp"
#include "tests/unit/proto/awkward_status.hpp"

using namespace pkit::proto;

namespace {

json without_newline(const std::string& line) {
    REQUIRE(!line.empty());
    CHECK(line.back() == '\n');
    CHECK(line.find('\n') == line.size() - 1);
    return json::parse(line.substr(0, line.size() - 1));
}

}  // namespace

TEST_CASE("ok_reply has id, ok and result") {
    auto line = ok_reply(42, json{{"pid", 1}});
    CHECK(line == "{\"id\":42,\"ok\":true,\"result\":{\"pid\":1}}\n");
}

TEST_CASE("error_reply spells every error code") {
    for (auto [code, name] : {std::pair{ErrorCode::bad_request, "bad_request"},
                              std::pair{ErrorCode::too_large, "too_large"},
                              std::pair{ErrorCode::unknown_command, "unknown_command"},
                              std::pair{ErrorCode::unknown_service, "unknown_service"},
                              std::pair{ErrorCode::invalid_config, "invalid_config"},
                              std::pair{ErrorCode::forbidden, "forbidden"}}) {
        auto value = without_newline(error_reply("x", code, "why"));
        CHECK(value["id"] == "x");
        CHECK(value["ok"] == false);
        CHECK(value["error"]["code"] == name);
        CHECK(value["error"]["message"] == "why");
        CHECK(error_code_from_string(name) == code);
        CHECK(to_string(code) == name);

        auto parsed = parse_reply(error_reply(Error{code, "m", 9}));
        REQUIRE(parsed.has_value());
        CHECK(parsed->kind == Reply::Kind::error);
        CHECK(parsed->error.code == code);
        CHECK(parsed->error.message == "m");
        CHECK(parsed->id == 9);
    }
    CHECK_FALSE(error_code_from_string("nope").has_value());
}

TEST_CASE("command names round-trip") {
    for (auto command : {Command::ping, Command::status, Command::start, Command::stop,
                         Command::restart, Command::signal, Command::logs, Command::events,
                         Command::explain, Command::reload, Command::shutdown}) {
        CHECK(command_from_string(to_string(command)) == command);
    }
    CHECK_FALSE(command_from_string("PING").has_value());
}

TEST_CASE("stream lines carry the request's id") {
    auto event = without_newline(event_line(3, json{{"type", "started"}}));
    CHECK(event == json{{"id", 3}, {"event", {{"type", "started"}}}});
    auto log = without_newline(log_line(nullptr, json{{"text", "hi"}}));
    CHECK(log == json{{"id", nullptr}, {"line", {{"text", "hi"}}}});
}

TEST_CASE("invalid UTF-8 in output text is replaced, not thrown on") {
    std::string text = "bad \xff\xfe bytes";
    std::string line;
    CHECK_NOTHROW(line = log_line(1, json{{"text", text}}));
    auto value = without_newline(line);
    CHECK(value["line"]["text"] == "bad \xEF\xBF\xBD\xEF\xBF\xBD bytes");
    CHECK_NOTHROW(line = error_reply(1, ErrorCode::bad_request, text));
}

TEST_CASE("parse_reply sorts lines by kind") {
    auto result = parse_reply(ok_reply(1, json::object()));
    REQUIRE(result.has_value());
    CHECK(result->kind == Reply::Kind::result);
    CHECK(result->body == json::object());

    auto event = parse_reply(event_line(1, json{{"type", "ready"}}));
    REQUIRE(event.has_value());
    CHECK(event->kind == Reply::Kind::event);
    CHECK(event->body["type"] == "ready");

    auto log = parse_reply(log_line(1, json{{"text", "x"}}));
    REQUIRE(log.has_value());
    CHECK(log->kind == Reply::Kind::line);

    auto unknown_code = parse_reply(R"({"id":1,"ok":false,"error":{"code":"new","message":"m"}})");
    REQUIRE(unknown_code.has_value());
    CHECK(unknown_code->error.code == ErrorCode::bad_request);
}

TEST_CASE("parse_reply refuses lines of no known shape without throwing") {
    for (auto line : {"", "[]", "garbage", "{}", R"({"ok":"yes"})", R"({"ok":false,"error":3})",
                      "{\"ok\":true,\"result\":\"\xff\"}"}) {
        CHECK_FALSE(parse_reply(line).has_value());
    }
}

TEST_CASE("result_text is a status reply's result as to_line would write it") {
    // pkitctl --json status prints it as it came: the same bytes as a tree made of it.
    StatusResult result;
    for (int k = 0; k < 12; ++k) {
        result.services.push_back(pkit::proto::test::awkward_status(k));
    }
    std::string line = ok_reply(7, result, {});
    line.pop_back();  // its newline
    auto text = result_text(line);
    REQUIRE(text.has_value());
    auto parsed = parse_reply(line);
    REQUIRE(parsed.has_value());
    CHECK(std::string(*text) + "\n" == to_line(parsed->body));
}

TEST_CASE("result_text takes the members in any order and with space around them") {
    CHECK(result_text(R"({"id":1,"ok":true,"result":{"a":[1,{"b":"}],\""}]}})") ==
          R"({"a":[1,{"b":"}],\""}]})");
    CHECK(result_text(" { \"result\" : [ 1 , 2 ] ,\n\"ok\" : true , \"id\" : \"x,}\" } ") ==
          "[ 1 , 2 ]");
    CHECK(result_text(R"({"ok\"":false,"ok":true,"result":"r"})") == "\"r\"");
    CHECK(result_text(R"({"ok":true,"result":0})") == "0");
    // A key given twice is read as its last, as parse_reply reads it (found by the fuzzer).
    CHECK(result_text(R"({"result":null,"ok":true,"result":{"a":1}})") == R"({"a":1})");
    CHECK_FALSE(result_text(R"({"ok":true,"result":1,"ok":false})").has_value());
}

TEST_CASE("result_text is nothing for an error, a line that is not JSON, or no result") {
    for (auto line : {"", "[]", "garbage", "{}", R"({"ok":true})", R"({"result":{}})",
                      R"({"ok":false,"result":{}})", R"({"ok":"true","result":{}})",
                      R"({"ok":true,"result":{})", R"({"ok":true,"result":{}} x)",
                      R"({"id":1,"ok":false,"error":{"code":"bad_request","message":"m"}})",
                      "{\"ok\":true,\"result\":\"\xff\"}"}) {
        CHECK_FALSE(result_text(line).has_value());
    }
}

TEST_CASE("parse_reply refuses a line nested more than 128 deep, unread") {
    // A client prints and compares what it reads, and both recurse: a tree a million
    // deep would cost pkitctl its stack. No pkitd reply nests more than a few levels
    // but for an echoed id, itself at most 64.
    static_assert(k_max_reply_depth == 128);
    auto holding = [](std::size_t levels) {
        return R"({"id":1,"ok":true,"result":)" + std::string(levels, '[') +
               std::string(levels, ']') + "}";
    };
    auto fits = parse_reply(holding(128));
    REQUIRE(fits.has_value());
    CHECK(fits->kind == Reply::Kind::result);
    for (std::size_t levels : {129, 1000000}) {
        CAPTURE(levels);
        auto deep = parse_reply(holding(levels));
        REQUIRE_FALSE(deep.has_value());
        CHECK(deep.error() == "the reply is nested more than 128 levels deep");
    }
    // result_text passes a line on as it came, building nothing: any depth.
    CHECK(result_text(holding(1000000)).has_value());
    // Brackets in strings are text.
    CHECK(parse_reply(R"({"id":1,"ok":true,"result":")" + std::string(1000, '{') + "\"}")
              .has_value());
}
