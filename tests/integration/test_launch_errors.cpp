// Launch failures (SPEC §3): a run that never started is reported with its reason in
// `last_launch_error`, has no `started` event, still grows `run`, and counts as a crash.

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

bool starts_with(const json& value, const std::string& prefix) {
    return value.is_string() && value.get<std::string>().rfind(prefix, 0) == 0;
}

// Waits until `svc` failed after 3 launch failures and checks what status says.
void check_launch_failures(Daemon& pkitd, const std::string& reason) {
    Client client = pkitd.client();
    json s = wait_status(client, "svc", state_is("failed"), 10s,
                         "three launch failures exhaust max_restarts = 2");
    CHECK_MESSAGE(starts_with(s["last_launch_error"], reason + ": "),
                  "last_launch_error: " << s["last_launch_error"].dump());
    CHECK(s["run"] == 3);
    CHECK(s["restarts"] == 2);
    CHECK(s["stopped"] == "restarts_exhausted");
    CHECK(s["last_exit"].is_null());
    CHECK(s["pid"].is_null());
}

}  // namespace

TEST_CASE("a missing binary is a not_found launch failure, never an exit 127") {
    TempDir dir;
    // autostart = false: the case subscribes to events before the first launch, so
    // that every failure is on the stream however slowly the case gets there.
    SUBCASE("an absolute path") {
        dir.service("svc", "command = [\"" + dir.file("no-such-binary") +
                               "\"]\nautostart = false\n" +
                               restart_table("on_crash", "200ms", 1.0, 2));
    }
    SUBCASE("a name looked up in PATH") {
        dir.service("svc", "command = [\"pkit-itest-no-such-command\"]\nautostart = false\n" +
                               restart_table("on_crash", "200ms", 1.0, 2));
    }
    Daemon pkitd(dir);
    pkitd.wait_ready();
    EventStream events(pkitd.socket());
    Client client = pkitd.client();
    json reply = client.request({{"cmd", "start"}, {"services", {"svc"}}});
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    events.until([](const json& e) { return e.value("type", "") == "restarts_exhausted"; }, 10s,
                 "restarts_exhausted");

    CHECK(events.of_type("started", "svc").empty());
    const auto exits = events.of_type("exited", "svc");
    CHECK(exits.size() == 3);
    for (const auto& e : exits) {
        CHECK_MESSAGE(starts_with(e.value("launch_error", json()), "not_found"),
                      "exited event: " << e.dump());
    }
    check_launch_failures(pkitd, "not_found");
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("a cwd that does not exist is a bad_cwd launch failure") {
    TempDir dir;
    dir.service("svc", "command = [\"/bin/true\"]\ncwd = \"" + dir.file("no-such-dir") + "\"\n" +
                           restart_table("on_crash", "50ms", 1.0, 2));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    check_launch_failures(pkitd, "bad_cwd");
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("a successful launch clears last_launch_error") {
    TempDir dir;
    // The binary appears after the first failures: the next launch succeeds.
    const std::string binary = dir.file("appears-later");
    dir.service("svc",
                "command = [\"" + binary + "\"]\n" + restart_table("on_crash", "100ms", 1.0));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(
        client, "svc",
        [](const json& s) { return s.value("last_launch_error", json()).is_string(); }, 5s,
        "a launch failure");

    dir.script("appears-later", "exec sleep 1000");
    json s = wait_status(client, "svc", state_is("running"), 5s, "a successful launch");
    CHECK(s["last_launch_error"].is_null());
    CHECK(s["pid"].is_number_integer());
    CHECK(pkitd.stop() == 0);
}
