// A status request for some fields only (SPEC §9 status "fields"): what
// pkitctl's table asks for, while --json keeps the whole rows.

#include <set>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

std::set<std::string> keys_of(const json& object) {
    std::set<std::string> keys;
    for (const auto& [key, value] : object.items()) {
        keys.insert(key);
    }
    return keys;
}

}  // namespace

TEST_CASE("status fields: each row carries its name and the fields asked, unknown names refused") {
    TempDir dir;
    dir.service("web", sh_command("exec sleep 1000"));
    dir.service("idle", "autostart = false\n" + sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json reply = client.request({{"id", 5}, {"cmd", "status"}, {"fields", {"state", "pid"}}});
    REQUIRE_MESSAGE(reply.value("ok", false), reply.dump());
    const json& rows = reply["result"]["services"];
    REQUIRE(rows.size() == 2);
    for (const auto& row : rows) {
        CHECK(keys_of(row) == std::set<std::string>{"name", "pid", "state"});
    }
    CHECK(reply["result"]["daemon"].contains("version"));  // the daemon object is whole
    // With services named, and resources only when asked in both places.
    reply = client.request({{"cmd", "status"},
                            {"services", {"web"}},
                            {"resources", true},
                            {"fields", {"resources", "uptime"}}});
    REQUIRE_MESSAGE(reply.value("ok", false), reply.dump());
    CHECK(keys_of(reply["result"]["services"][0]) ==
          std::set<std::string>{"name", "resources", "uptime"});
    reply = client.request({{"id", "x"}, {"cmd", "status"}, {"fields", {"state", "uptme"}}});
    CHECK_FALSE(reply.value("ok", true));
    CHECK(reply["id"] == "x");
    CHECK(reply["error"]["code"] == "bad_request");
    CHECK(reply["error"]["message"] ==
          "\"fields\": \"uptme\" is not a field of a service's status");
    // pkitctl status --json prints the protocol's whole rows, as without "fields". It exits
    // 3 while a service named is not running: on a loaded machine web may still be
    // starting.
    wait_status(client, "web", state_is("running"), 10s, "web running");
    auto printed = run_ctl({"--socket", pkitd.socket(), "--json", "status", "web"});
    REQUIRE_MESSAGE(printed.exit_code == 0, printed.all());
    json whole = json::parse(printed.out);
    CHECK(keys_of(whole["services"][0]) == keys_of(status(client, "web")));
    CHECK(whole["services"][0].size() == 25);  // every member but resources (not asked)
}
