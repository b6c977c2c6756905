// The direct writers of big replies: byte for byte what the JSON DOM path gives, for
// plain text, escapes, invalid UTF-8, floats and nulls.

#include "tests/unit/proto/proto_doctest.hpp"

#include "proto/json_writer.hpp"
#include "proto/reply.hpp"
#include "proto/status.hpp"
#include "tests/unit/proto/awkward_status.hpp"

using namespace pkit::proto;
using pkit::proto::test::awkward_status;

TEST_CASE("the status reply written directly is the same line as through the JSON tree") {
    StatusResult result;
    result.daemon = DaemonStatus{.pid = 1, .version = "0.1.0", .uptime = 3.25};
    for (int k = 0; k < 9; ++k) {
        result.services.push_back(awkward_status(k));
    }
    for (const json& id : {json(7), json("req \"a\""), json(nullptr), json{{"x", 1}}}) {
        CHECK(ok_reply(id, result) == ok_reply(id, json(result)));
    }
    ServicesResult services{result.services};
    CHECK(ok_reply(json(1), services) == ok_reply(json(1), json(services)));
    ServicesResult none;
    CHECK(ok_reply(json(1), none) == ok_reply(json(1), json(none)));
}

TEST_CASE("the status reply filled a row at a time is the same line as from a vector") {
    StatusResult result;
    result.daemon = DaemonStatus{.pid = 1, .version = "0.1.0", .uptime = 3.25};
    for (int k = 0; k < 9; ++k) {
        result.services.push_back(awkward_status(k));
    }
    // One row reused: a member one row sets and the next leaves unset must not leak.
    std::vector<std::size_t> filled;
    auto fill = [&](std::size_t k, ServiceStatus& row) {
        filled.push_back(k);
        row = result.services[k];
    };
    for (const std::vector<std::string>& fields :
         {std::vector<std::string>{}, std::vector<std::string>{"state", "pid", "last_exit"}}) {
        filled.clear();
        CHECK(ok_status_reply(json(4), result.daemon, result.services.size(), fill, fields) ==
              ok_reply(json(4), result, fields));
        CHECK(filled == std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 6, 7, 8});
    }
    CHECK(ok_status_reply(json(4), result.daemon, 0, fill) ==
          ok_reply(json(4), StatusResult{result.daemon, {}}));
}

TEST_CASE("JsonWriter separates members and elements and nests") {
    std::string out;
    JsonWriter w(out);
    w.begin_object();
    w.key("a");
    w.begin_array();
    w.value(1);
    w.value(2.5);
    w.null();
    w.begin_object();
    w.end_object();
    w.end_array();
    w.key("b");
    w.value(std::optional<int>());
    w.key("c");
    w.value(false);
    w.end_object();
    CHECK(out == R"({"a":[1,2.5,null,{}],"b":null,"c":false})");
}

TEST_CASE("ok_reply taking its result over gives the same line as copying it") {
    json result{{"services", json::array({json{{"name", "a"}}})}};
    std::string copied = ok_reply(json(3), result);
    CHECK(ok_reply(json(3), json(result)) == copied);
    CHECK(copied.back() == '\n');
}
