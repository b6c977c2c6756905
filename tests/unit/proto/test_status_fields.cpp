// A status request for some fields only ("fields"), and the reader that takes
// status rows straight from a reply line: the same rows as the JSON tree gives.

#include "tests/unit/proto/proto_doctest.hpp"

#include <nlohmann/json.hpp>

#include "proto/reply.hpp"
#include "proto/request.hpp"
#include "proto/status.hpp"
#include "proto/status_rows.hpp"
#include "tests/unit/proto/awkward_status.hpp"

using namespace pkit::proto;
using pkit::proto::test::awkward_status;

namespace {

std::vector<ServiceStatus> rows_through_tree(const std::string& line) {
    return json::parse(line).at("result").at("services").get<std::vector<ServiceStatus>>();
}

std::vector<ServiceStatus> rows_read(const std::string& line) {
    auto rows = parse_status_rows(line);
    REQUIRE(rows.has_value());
    REQUIRE(rows->has_value());
    return **rows;
}

}  // namespace

TEST_CASE("status fields: parsed for status, kept once, unknown names refused") {
    auto request = parse_request(
        R"({"cmd":"status","fields":["state","pid","state","last_exit"],"resources":true})");
    REQUIRE(request.has_value());
    CHECK(request->fields == std::vector<std::string>{"state", "pid", "last_exit"});
    auto again = parse_request(json(*request).dump());  // round-trips
    REQUIRE(again.has_value());
    CHECK(*again == *request);
    // Every member name of a status row may be asked for.
    for (const auto& name : status_fields()) {
        CHECK(parse_request(R"({"cmd":"status","fields":[")" + name + "\"]}").has_value());
    }
    CHECK(status_fields().size() == 26);
    auto unknown = parse_request(R"({"id":3,"cmd":"status","fields":["state","uptim"]})");
    REQUIRE_FALSE(unknown.has_value());
    CHECK(unknown.error().code == ErrorCode::bad_request);
    CHECK(unknown.error().message == "\"fields\": \"uptim\" is not a field of a service's status");
    CHECK(unknown.error().id == 3);
    for (auto bad : {R"("state")", R"(["state",1])", "{}"}) {
        auto line = std::string(R"({"cmd":"status","fields":)") + bad + "}";
        auto parsed = parse_request(line);
        REQUIRE_FALSE(parsed.has_value());
        CHECK(parsed.error().message == "\"fields\" must be an array of strings");
    }
    // Another command ignores it, as any field it does not take.
    CHECK(parse_request(R"({"cmd":"ping","fields":["bogus"]})").has_value());
}

TEST_CASE("status fields: each row carries its name and the fields asked, the daemon whole") {
    StatusResult result{DaemonStatus{.pid = 1, .version = "0.2.0"},
                        {awkward_status(1), awkward_status(3)}};
    std::string line = ok_reply(json(9), result, {"state", "resources", "last_exit"});
    json reply = json::parse(line);
    CHECK(reply.at("result").at("daemon") == json(result.daemon));
    const json& rows = reply.at("result").at("services");
    REQUIRE(rows.size() == 2);
    // awkward_status(1)'s request asked for its resources (Requested); awkward_status(3)'s did not.
    CHECK(rows[0] == json{{"name", "svc-1"},
                          {"state", "running"},
                          {"last_exit", json(*awkward_status(1).last_exit)},
                          {"resources", json(*awkward_status(1).resources.value)}});
    CHECK(rows[1] == json{{"name", "svc-3"},
                          {"state", "running"},
                          {"last_exit", json(*awkward_status(3).last_exit)}});
    // Without fields, the whole rows as before.
    CHECK(ok_reply(json(9), result, {}) == ok_reply(json(9), json(result)));
}

TEST_CASE("status rows read from the line are the rows of the JSON tree") {
    StatusResult result{DaemonStatus{.pid = 1, .version = "0.2.0"}, {}};
    for (int k = 0; k < 9; ++k) {
        result.services.push_back(awkward_status(k));
    }
    std::string whole = ok_reply(json{{"a", {1, 2}}}, result);
    whole.pop_back();  // the newline, as the client's line reader strips it
    CHECK(rows_read(whole) == rows_through_tree(whole));
    std::string some = ok_reply(json(1), result, {"group", "state", "pid", "health", "resources"});
    some.pop_back();
    CHECK(rows_read(some) == rows_through_tree(some));
    std::string services = ok_reply(json(1), ServicesResult{result.services});
    services.pop_back();
    CHECK(rows_read(services) == rows_through_tree(services));
    // Unknown members, as a newer pkitd may add, are skipped whatever their shape.
    CHECK(
        rows_read(R"({"ok":true,"result":{"services":[{"name":"a","state":"running",)"
                  R"("new":{"x":[1,{"y":null}]},"newer":[[]]}],"more":{}},"id":null})") ==
        rows_through_tree(R"({"ok":true,"result":{"services":[{"name":"a","state":"running"}]}})"));
}

TEST_CASE("status rows: other replies are left to parse_reply, bad ones are errors") {
    std::string error = error_reply(json(1), ErrorCode::unknown_service, "no service \"x\"");
    error.pop_back();
    auto other = parse_status_rows(error);
    REQUIRE(other.has_value());
    CHECK_FALSE(other->has_value());
    CHECK_FALSE(parse_status_rows(R"({"id":1,"event":{"type":"started"}})")->has_value());
    auto error_of = [](std::string_view line) {
        auto rows = parse_status_rows(line);
        REQUIRE_FALSE(rows.has_value());
        return rows.error();
    };
    CHECK(error_of("") == "the reply is not a JSON object");
    CHECK(error_of("[1]") == "the reply is not a JSON object");
    CHECK(error_of(R"({"ok":true,"result":{"services":[]}} x)") ==
          "the reply is not a JSON object");
    CHECK(error_of(R"({"ok":1})") == "\"ok\" is not a boolean");
    CHECK(error_of(R"({"ok":true,"result":{}})") == "the result has no \"services\" array");
    CHECK(error_of(R"({"ok":true,"result":{"services":[1]}})") == "a status row is not an object");
    CHECK(error_of(R"({"ok":true,"result":{"services":[{"name":"a"}]}})") ==
          "a status row lacks its \"name\" or \"state\"");
    CHECK(error_of(R"({"ok":true,"result":{"services":[{"name":"a","state":"x","pid":"1"}]}})") ==
          "\"pid\" has the wrong type in a status row");
    CHECK(error_of(R"({"ok":true,"result":{"services":[{"name":"a","state":"x","health":3}]}})") ==
          "\"health\" has the wrong type in a status row");
    CHECK(error_of(R"({"ok":true,"result":{"services":[{"name":"a","state":"x","run":[]}]}})") ==
          "\"run\" has the wrong type in a status row");
    CHECK(error_of(R"({"ok":true,"result":{"services":[{"name":{},"state":"x"}]}})") ==
          "\"name\" has the wrong type in a status row");
    // resource_limits: an object of a string array and an array of {key, reason}.
    const std::string row = R"({"ok":true,"result":{"services":[{"name":"a","state":"x",)";
    CHECK(error_of(row + R"("resource_limits":3}]}})") ==
          "\"resource_limits\" has the wrong type in a status row");
    CHECK(error_of(row + R"("resource_limits":{"applied":[1]}}]}})") ==
          "\"applied\" has the wrong type in a status row");
    CHECK(error_of(row + R"("resource_limits":{"applied":"cpu_max"}}]}})") ==
          "\"applied\" has the wrong type in a status row");
    CHECK(error_of(row + R"("resource_limits":{"not_applied":["memory_max"]}}]}})") ==
          "\"not_applied\" has the wrong type in a status row");
    CHECK(error_of(row + R"("resource_limits":{"not_applied":[{"key":1}]}}]}})") ==
          "\"key\" has the wrong type in a status row");
    auto limits = rows_read(row + R"("resource_limits":{"applied":["cpu_max"],"new":[[1]],)"
                                  R"("not_applied":[{"key":"pids_max","reason":"r","x":{}}]}}]}})");
    REQUIRE(limits.size() == 1);
    CHECK(limits[0].resource_limits ==
          ResourceLimitsInfo{.applied = {"cpu_max"}, .not_applied = {{"pids_max", "r"}}});
}
