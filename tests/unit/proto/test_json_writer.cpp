// The direct writers of big replies: byte for byte what the JSON DOM path gives, for
// plain text, escapes, invalid UTF-8, floats and nulls.

#include "tests/unit/proto/proto_doctest.hpp"

#include "proto/json_writer.hpp"
#include "proto/reply.hpp"
#include "proto/status.hpp"

using namespace pkit::proto;

namespace {

ServiceStatus awkward_status(int k) {
    ServiceStatus status;
    status.name = "svc-" + std::to_string(k);
    status.state = k % 2 ? "running" : "backoff";
    status.group = k % 3 ? std::nullopt : std::optional<std::string>("g");
    status.pid = k % 2 ? std::optional<int>(1000 + k) : std::nullopt;
    status.run = k;
    status.started_at = 1700000000.0 + k / 7.0;
    status.uptime = k % 2 ? std::optional<double>(k * 0.001) : std::nullopt;
    status.ready = k % 2 == 1;
    status.restarts = k;
    status.next_restart_in = k % 2 ? std::nullopt : std::optional<double>(1e-5 * k);
    status.health = k % 4 ? std::nullopt : std::optional<HealthInfo>(HealthInfo{"unhealthy", 3});
    // sd_notify STATUS= text is whatever the service sent: quotes, controls, bad UTF-8.
    status.notify_status = "say \"hi\"\t\\ caf\xc3\xa9 \xff\x01";
    status.last_exit = ExitInfo{.code = 1, .signal = std::nullopt, .duration = 2.0, .at = 1e9};
    status.last_launch_error = "not_found: /x: No such file or directory";
    return status;
}

}  // namespace

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
