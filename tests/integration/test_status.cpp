// The status object (SPEC §5): every field of the contract, with its type, in the
// states a foundation service goes through.

#include <cmath>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

bool number_or_null(const json& v) {
    return v.is_number() || v.is_null();
}

// Every field is present with its contract type.
void check_shape(const json& s) {
    INFO(s.dump());
    for (const char* key : {"name", "state"}) {
        CHECK(s[key].is_string());
    }
    CHECK(s["group"].is_null());
    CHECK((s["pid"].is_number_integer() || s["pid"].is_null()));
    CHECK(s["run"].is_number_integer());
    CHECK(number_or_null(s["started_at"]));
    CHECK(number_or_null(s["uptime"]));
    CHECK(s["ready"].is_boolean());
    for (const char* key : {"restarts", "storm_pauses", "liveness_kills"}) {
        CHECK(s[key].is_number_integer());
    }
    CHECK((s["stopped"].is_string() || s["stopped"].is_null()));
    CHECK(number_or_null(s["next_restart_in"]));
    CHECK(s["health"].is_null());
    CHECK(s["notify_status"].is_null());
    CHECK((s["last_exit"].is_object() || s["last_exit"].is_null()));
    CHECK((s["last_launch_error"].is_string() || s["last_launch_error"].is_null()));
}

}  // namespace

TEST_CASE("status has every field of the contract, with its type") {
    TempDir dir;
    dir.service("runner", sh_command("exec sleep 1000"));
    dir.service("waiter", sh_command("exit 1") + restart_table("on_crash", "30s"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    const double before = unix_now();

    SUBCASE("running") {
        json s = wait_status(client, "runner", state_is("running"), 5s, "running");
        check_shape(s);
        CHECK(s["run"] == 1);
        CHECK(s["pid"].is_number_integer());
        CHECK(pid_alive(s["pid"].get<pid_t>()));
        CHECK(s["ready"] == true);
        CHECK(s["uptime"].get<double>() >= 0.0);
        CHECK(std::abs(s["started_at"].get<double>() - before) < 5.0);
        CHECK(s["last_exit"].is_null());
        CHECK(s["next_restart_in"].is_null());
    }
    SUBCASE("waiting to restart") {
        json s = wait_status(client, "waiter", state_is("backoff"), 5s, "backoff");
        check_shape(s);
        CHECK(s["pid"].is_null());
        CHECK(s["uptime"].is_null());
        CHECK(s["next_restart_in"].get<double>() > 20.0);
        CHECK(s["next_restart_in"].get<double>() <= 30.0);
        const json exit = last_exit(s);
        CHECK(exit["code"] == 1);
        CHECK(exit["signal"].is_null());
        CHECK(exit["duration"].is_number());
        CHECK(exit["at"].is_number());
        CHECK(exit["timed_out"] == false);
        CHECK(exit["killed_by"].is_null());
    }
    SUBCASE("the daemon object") {
        json d = daemon_status(client);
        INFO(d.dump());
        CHECK(d["pid"] == pkitd.pid());
        CHECK(d["version"].is_string());
        CHECK(d["protocol"] == 1);
        CHECK(d["uptime"].is_number());
        CHECK(d["config_dir"] == dir.str());
        CHECK(d["socket"] == pkitd.socket());
        CHECK(d["state"] == "running");
        CHECK(d["orphans_reaped"].is_number_integer());
        CHECK(d["storm_pauses"].is_number_integer());
    }
    SUBCASE("services listed in start order, or only those asked for") {
        json reply = client.command("status");
        REQUIRE(reply["result"]["services"].size() == 2);
        CHECK(reply["result"]["services"][0]["name"] == "runner");
        CHECK(reply["result"]["services"][1]["name"] == "waiter");
        reply = client.request({{"cmd", "status"}, {"services", {"waiter"}}});
        REQUIRE(reply["result"]["services"].size() == 1);
        CHECK(reply["result"]["services"][0]["name"] == "waiter");
    }
    CHECK(pkitd.stop() == 0);
}
