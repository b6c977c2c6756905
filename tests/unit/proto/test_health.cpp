// The `health` command and result, and `resources` in status (SPEC §9, §5, §11).

#include "tests/unit/proto/proto_doctest.hpp"

#include "proto/health.hpp"
#include "proto/request.hpp"
#include "proto/status.hpp"

using namespace pkit::proto;

TEST_CASE("health: the request parses and the result has live, ready and not_ready") {
    auto request = parse_request(R"({"id": 1, "cmd": "health"})");
    REQUIRE(request);
    CHECK(request->cmd == Command::health);
    HealthResult result{true, false, {{"web", "backoff", "backoff: restart 3 in 1.6 s"}}};
    json j = result;
    CHECK(j == json::parse(R"({"live": true, "ready": false, "not_ready":
        [{"name": "web", "state": "backoff", "reason": "backoff: restart 3 in 1.6 s"}]})"));
    CHECK(j.get<HealthResult>() == result);
}

TEST_CASE("status resources: asked for, the field is written (null without a run); else absent") {
    auto request = parse_request(R"({"cmd": "status", "resources": true})");
    REQUIRE(request);
    CHECK(request->resources);
    CHECK(json(*request)["resources"] == true);
    CHECK_FALSE(parse_request(R"({"cmd": "status", "resources": 1})"));

    ServiceStatus status;
    status.name = "web";
    status.state = "running";
    CHECK_FALSE(json(status).contains("resources"));
    CHECK(ok_reply(nullptr, StatusResult{{}, {status}}).find("resources") == std::string::npos);

    status.resources.asked = true;
    CHECK(json(status)["resources"].is_null());
    status.resources.value = Resources{4, 1.5, 52428800};
    json written = json(status)["resources"];
    CHECK(written == json::parse(R"({"processes": 4, "cpu_seconds": 1.5, "rss_bytes": 52428800})"));
    // The DOM-free writer gives the same bytes as nlohmann.
    std::string line = ok_reply(nullptr, StatusResult{{}, {status}});
    CHECK(json::parse(line)["result"]["services"][0] == json(status));
    CHECK(json(status).get<ServiceStatus>() == status);
}
