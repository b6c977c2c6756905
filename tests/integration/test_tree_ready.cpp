// Group member order waits for readiness (SPEC §6: "start order; each waits for the
// one before to be ready"): b, after a in its group's members, is not started while a
// is starting, and starts only after a's `ready` event.

#include <string>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// The index of the first event of `type` for `service`, or -1.
int event_index(const std::vector<json>& events, const std::string& type,
                const std::string& service) {
    for (std::size_t i = 0; i < events.size(); ++i) {
        if (is_event(events[i], type, service)) {
            return static_cast<int>(i);
        }
    }
    return -1;
}

}  // namespace

TEST_CASE("group member order: b waits until a is ready, not just started") {
    TempDir dir;
    const std::string flag = dir.file("a-ready");
    dir.daemon_config("[groups.g]\nmembers = [\"a\", \"b\"]\n");
    dir.service("a", sh_command("exec sleep 1000") + "[ready]\nexec = [\"test\", \"-f\", " +
                         toml_str(flag) +
                         "]\ninterval = \"100ms\"\ntimeout = \"60s\"\n[stop]\ntimeout = \"1s\"\n");
    dir.service("b", sh_command("exec sleep 1000") + "[stop]\ntimeout = \"1s\"\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    EventStream events(pkitd.socket());

    wait_status(client, "a", state_is("starting"), 10s, "a launched, not ready");
    // Ten readiness intervals: a keeps starting and b is never launched.
    const auto deadline = Clock::now() + 1s;
    while (Clock::now() < deadline) {
        json a = status(client, "a");
        json b = status(client, "b");
        REQUIRE_MESSAGE(a["state"] == "starting", a.dump());
        REQUIRE_MESSAGE(b["state"] == "waiting", b.dump());
        REQUIRE(b["run"] == 0);
        REQUIRE(b["pid"].is_null());
        events.collect_until(Clock::now() + 50ms);
    }
    REQUIRE(event_index(events.seen(), "started", "b") < 0);

    const double flagged = unix_now();
    write_file(flag, "");
    events.until([](const json& e) { return is_event(e, "started", "b"); }, 10s, "b starts");
    const auto& seen = events.seen();
    INFO("events: " << json(seen).dump());
    const int ready_a = event_index(seen, "ready", "a");
    const int started_b = event_index(seen, "started", "b");
    REQUIRE(ready_a >= 0);
    CHECK(ready_a < started_b);
    CHECK(seen[ready_a]["at"].get<double>() >= flagged);
    CHECK(seen[started_b]["at"].get<double>() >= seen[ready_a]["at"].get<double>());
    CHECK(seen[ready_a]["group"] == "g");
    CHECK(seen[started_b]["group"] == "g");

    json b = wait_status(client, "b", state_is("running"), 5s, "b running");
    CHECK(b["run"] == 1);
    CHECK(b["started_at"].get<double>() >= flagged);
    json a = status(client, "a");
    CHECK(a["state"] == "running");
    CHECK(a["ready"] == true);
    CHECK(a["run"] == 1);
    CHECK(pkitd.stop() == 0);
}
