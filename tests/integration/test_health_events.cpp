// `health` events (SPEC §9 event types, §3 liveness): one event each time a run's
// health status changes (unknown → healthy → unhealthy → healthy), carrying the new
// `status`, and none while the status stays the same however many probes run.

#include <string>
#include <vector>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// The `status` of each health event of `service` among `events`, in order.
std::vector<std::string> health_statuses(const std::vector<json>& events,
                                         const std::string& service) {
    std::vector<std::string> out;
    for (const auto& e : events) {
        if (is_event(e, "health", service)) {
            out.push_back(e.value("status", "?"));
        }
    }
    return out;
}

}  // namespace

TEST_CASE("health events: healthy then unhealthy then healthy, once per change") {
    TempDir dir;
    const std::string flag = dir.file("flag");
    const std::string probes = dir.file("probes");
    write_file(flag, "");
    // Each probe leaves a line, so the case can wait for probes to have happened. A
    // large `failures` keeps the run alive through a long unhealthy stretch.
    dir.service("svc", "autostart = false\n" + sh_command("exec sleep 1000") +
                           "[health]\nexec = [\"/bin/sh\", \"-c\", " +
                           toml_str("echo probe >> " + probes + "; test -f " + flag) +
                           "]\ninterval = \"100ms\"\nfailures = 1000\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    // Subscribed before the run starts: no health event can be missed.
    EventStream events(pkitd.socket());
    json reply = client.request({{"cmd", "start"}, {"services", {"svc"}}});
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());

    auto probe_count = [&] { return read_lines(probes).size(); };
    auto wait_probes = [&](std::size_t n, const std::string& what) {
        wait_for([&] { return probe_count() >= n; }, 10s, what,
                 [&] { return std::to_string(probe_count()); });
    };

    json healthy = events.until([](const json& e) { return is_event(e, "health", "svc"); }, 10s,
                                "the first health event");
    CHECK(healthy["status"] == "healthy");
    // Six more successful probes: the status stays healthy, no new event.
    wait_probes(probe_count() + 6, "6 more healthy probes");

    fs::remove(flag);
    json unhealthy = events.until([](const json& e) { return is_event(e, "health", "svc"); }, 10s,
                                  "the unhealthy event");
    CHECK(unhealthy["status"] == "unhealthy");
    // Six more failed probes: still unhealthy, streak growing, no new event.
    wait_probes(probe_count() + 6, "6 more failing probes");
    json s = wait_status(
        client, "svc", [](const json& st) { return st["health"].value("failures", 0) >= 5; }, 5s,
        "at least 5 failures in a row");
    CHECK(s["health"]["status"] == "unhealthy");
    CHECK(s["liveness_kills"] == 0);

    write_file(flag, "");
    json again = events.until([](const json& e) { return is_event(e, "health", "svc"); }, 10s,
                              "healthy again");
    CHECK(again["status"] == "healthy");
    wait_probes(probe_count() + 6, "6 more healthy probes");

    // Every probe result above reached pkitd before this stop: the exited event that
    // follows closes the list of health events.
    reply = client.request({{"cmd", "stop"}, {"services", {"svc"}}});
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    events.until([](const json& e) { return is_event(e, "exited", "svc"); }, 10s, "the run ends");
    INFO("events: " << json(events.seen()).dump());
    CHECK(health_statuses(events.seen(), "svc") ==
          std::vector<std::string>{"healthy", "unhealthy", "healthy"});
    // Each health event follows the run's start, and all belong to the one run.
    std::size_t started = 0;
    for (const auto& e : events.seen()) {
        started += is_event(e, "started", "svc") ? 1 : 0;
    }
    CHECK(started == 1);
    CHECK(status(client, "svc")["run"] == 1);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("health events: a restarted run starts unknown and reports healthy again") {
    TempDir dir;
    dir.service("svc", "autostart = false\n" + sh_command("exec sleep 1000") +
                           restart_table("on_crash", "100ms") +
                           "[health]\nexec = [\"true\"]\ninterval = \"100ms\"\nfailures = 3\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    EventStream events(pkitd.socket());
    json reply = client.request({{"cmd", "start"}, {"services", {"svc"}}});
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    events.until([](const json& e) { return is_event(e, "health", "svc"); }, 10s, "run 1 healthy");
    reply = client.request({{"cmd", "signal"}, {"services", {"svc"}}, {"signal", "KILL"}});
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    events.until(
        [](const json& e) { return is_event(e, "started", "svc") && e.value("run", 0) == 2; }, 10s,
        "run 2 starts");
    // Run 2 begins with health unknown, so its first success is a change: one event.
    json second = events.until([](const json& e) { return is_event(e, "health", "svc"); }, 10s,
                               "run 2 healthy");
    CHECK(second["status"] == "healthy");
    CHECK(health_statuses(events.seen(), "svc") == std::vector<std::string>{"healthy", "healthy"});
    CHECK(pkitd.stop() == 0);
}
