// stop waits as long as the work takes (SPEC §10): without --timeout, pkitctl sizes
// its wait for the reply from the services' stop.timeout; --no-block returns once pkitd
// accepted the request.

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// A service that ignores SIGTERM, with a stop.timeout of `timeout`.
void stubborn_service_toml(const TempDir& dir, const std::string& timeout) {
    dir.service("slow", sh_command("trap '' TERM; touch " + dir.file("armed") + "; sleep 1000") +
                            "[stop]\ntimeout = " + toml_str(timeout) + "\n");
}

}  // namespace

TEST_CASE("pkitctl stop of a service with stop.timeout 15s succeeds after about 15 s") {
    TempDir dir;
    stubborn_service_toml(dir, "15s");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "slow", state_is("running"), 5s, "running");
    wait_file(dir.file("armed"));

    const auto start = Clock::now();
    const auto result = run_ctl({"--socket", pkitd.socket(), "stop", "slow"}, 60s);
    const double took = seconds_since(start);
    INFO(result.all());
    CHECK(result.exit_code == 0);
    CHECK(took >= 14.0);
    CHECK(took < 40.0);
    json s = status(client, "slow");
    CHECK(s["state"] == "stopped");
    CHECK(last_exit(s)["signal"] == "SIGKILL");
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("pkitctl stop --no-block returns before the service has stopped") {
    TempDir dir;
    stubborn_service_toml(dir, "3s");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "slow", state_is("running"), 5s, "running");
    wait_file(dir.file("armed"));

    const auto result =
        run_ctl({"--socket", pkitd.socket(), "--json", "stop", "--no-block", "slow"}, 60s);
    REQUIRE_MESSAGE(result.exit_code == 0, result.all());
    json rows = json::parse(result.out);
    CHECK(rows["services"][0]["state"] == "stopping");
    // The request was accepted: the stop goes on without pkitctl.
    CHECK(status(client, "slow")["state"] == "stopping");
    wait_status(client, "slow", state_is("stopped"), 10s, "the stop completes");
    CHECK(pkitd.stop() == 0);
}
