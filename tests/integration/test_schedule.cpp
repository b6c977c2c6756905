// Scheduled jobs (SPEC §12) on the real pkitd: `every 1s` jobs run an episode a tick,
// wait `scheduled` between them with `schedule` in status, miss the ticks that come
// during an episode, answer `wait --for done` at the next episode's end, and are
// disarmed by stop and run at once by start.

#include <fstream>

#include "tests/integration/harness.hpp"
#include "tests/integration/http_client.hpp"

using namespace pkit::itest;

namespace {

std::string job(const std::string& schedule, const std::string& script) {
    return "type = \"oneshot\"\nschedule = \"" + schedule + "\"\n" + sh_command(script) +
           "[restart]\njitter = false\n";
}

int lines_in(const std::string& path) {
    std::ifstream in(path);
    int n = 0;
    for (std::string line; std::getline(in, line);) {
        ++n;
    }
    return n;
}

std::function<bool(const json&)> last_result_is(const std::string& result) {
    return [result](const json& s) {
        return s["schedule"].is_object() && s["schedule"]["last_result"] == result &&
               s["state"] == "scheduled";
    };
}

}  // namespace

TEST_CASE("an every-1s job runs an episode a tick and waits scheduled between them") {
    TempDir dir;
    const std::string runs = dir.file("runs");
    dir.service("tick", job("every 1s", "echo run >> " + runs));
    dir.service("web", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();

    json s = status(client, "tick");
    CHECK(s["type"] == "oneshot");
    REQUIRE(s["schedule"].is_object());
    CHECK(s["schedule"]["expression"] == "every 1s");
    CHECK(status(client, "web")["schedule"].is_null());

    s = wait_status(client, "tick", last_result_is("done"), 10s, "an episode ends done");
    CHECK(s["schedule"]["missed"] == 0);
    CHECK(s["schedule"]["last_started"].is_number());
    wait_for([&] { return lines_in(runs) >= 3; }, 10s, "three episodes",
             [&] { return status(client, "tick").dump(); });

    // Between episodes: scheduled, with the next run in UPTIME's place.
    wait_for(
        [&] {
            CommandResult out = ctl(pkitd, {"status", "tick"});
            return out.out.find("scheduled") != std::string::npos &&
                   out.out.find(" in ") != std::string::npos;
        },
        10s, "pkitctl status shows scheduled and the time to the next run",
        [&] { return ctl(pkitd, {"status"}).all(); });
    CommandResult shown = ctl(pkitd, {"show", "tick"});
    CHECK_MESSAGE(shown.out.find("schedule:") != std::string::npos, shown.out);
    CHECK_MESSAGE(shown.out.find("every 1s; next ") != std::string::npos, shown.out);
    CHECK_MESSAGE(shown.out.find(", then ") != std::string::npos, shown.out);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("a tick during an episode is missed, counted, sent as an event and in metrics") {
    TempDir dir;
    const int port = with_http(dir);
    dir.service("slow", job("every 1s", "sleep 2.5"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    EventStream events(pkitd.socket());
    Client client = pkitd.client();
    json missed = events.until([](const json& e) { return is_event(e, "missed", "slow"); }, 10s,
                               "a missed tick");
    CHECK(missed["service"] == "slow");
    wait_for([&] { return status(client, "slow")["schedule"]["missed"].get<int>() >= 1; }, 5s,
             "missed counted");
    wait_status(client, "slow", last_result_is("done"), 10s, "the episode ends done");
    const std::string body = http_get(port, "/metrics").body;
    CHECK_MESSAGE(
        body.find("pkit_service_missed_runs_total{service=\"slow\"} ") != std::string::npos, body);
    CHECK(body.find("pkit_service_next_run_timestamp_seconds{service=\"slow\"} ") !=
          std::string::npos);
    CHECK(body.find("pkit_service_last_success_timestamp_seconds{service=\"slow\"} ") !=
          std::string::npos);
    CHECK(body.find("pkit_service_state{service=\"slow\",state=\"scheduled\"}") !=
          std::string::npos);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("wait --for done on a scheduled job waits for its next episode's end") {
    TempDir dir;
    const std::string runs = dir.file("runs");
    dir.service("job", job("every 1s", "sleep 0.3; echo run >> " + runs));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    CommandResult waited = ctl(pkitd, {"wait", "--for", "done", "--within", "10s", "job"});
    CHECK_MESSAGE(waited.exit_code == 0, waited.all());
    CHECK(lines_in(runs) >= 1);
    // Once more: the next episode, not the one already ended.
    const int before = lines_in(runs);
    waited = ctl(pkitd, {"wait", "--for", "done", "--within", "10s", "job"});
    CHECK_MESSAGE(waited.exit_code == 0, waited.all());
    CHECK(lines_in(runs) > before);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("stop disarms a scheduled job; start runs an episode now and arms it") {
    TempDir dir;
    const std::string runs = dir.file("runs");
    dir.service("job", job("@yearly", "echo run >> " + runs));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json s = status(client, "job");
    CHECK(s["state"] == "scheduled");
    CHECK(s["schedule"]["next"].is_number());
    CHECK(s["schedule"]["last_result"].is_null());

    CommandResult started = ctl(pkitd, {"start", "job"});
    CHECK_MESSAGE(started.exit_code == 0, started.all());
    wait_status(client, "job", last_result_is("done"), 10s, "the started episode ends done");
    CHECK(lines_in(runs) == 1);

    CommandResult stopped = ctl(pkitd, {"stop", "job"});
    CHECK_MESSAGE(stopped.exit_code == 0, stopped.all());
    s = status(client, "job");
    CHECK(s["state"] == "stopped");
    CHECK(s["schedule"]["next"].is_null());
    CHECK(s["schedule"]["last_result"] == "done");

    ctl(pkitd, {"start", "job"});
    s = wait_status(client, "job", last_result_is("done"), 10s, "armed again after an episode");
    CHECK(s["schedule"]["next"].is_number());
    CHECK(lines_in(runs) == 2);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("a reload that changes a schedule re-arms it and lets the running episode go on") {
    TempDir dir;
    dir.service("job", job("every 1s", gate(dir) + "exit 0"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json running = wait_status(client, "job", state_is("running"), 10s, "an episode runs");
    const int pid = running["pid"];
    dir.service("job", job("@yearly", gate(dir) + "exit 0"));
    json reloaded = reload(client);
    CHECK(reloaded["changed"] == json::array({"job"}));
    json s = status(client, "job");
    CHECK(s["state"] == "running");
    CHECK(s["pid"] == pid);
    CHECK(s["schedule"]["expression"] == "@yearly");
    // The next tick is the coming new year, not a second from now.
    CHECK(s["schedule"]["next"].get<double>() - s["started_at"].get<double>() > 3600);
    open_gate(dir);
    s = wait_status(client, "job", last_result_is("done"), 10s, "the episode ends done");
    CHECK(s["run"] == running["run"]);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("a scheduled job is supervised: no stop reason until the operator stops it") {
    TempDir dir;
    dir.service("never", job("@yearly", "exit 0"));
    dir.service("tick", job("every 1s", "exit 0"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    // Never run yet: scheduled, nobody stopped it.
    json s = status(client, "never");
    CHECK(s["state"] == "scheduled");
    CHECK_MESSAGE(s["stopped"].is_null(), s.dump());
    CommandResult shown = ctl(pkitd, {"show", "never"});
    CHECK_MESSAGE(shown.out.find("scheduled") != std::string::npos, shown.out);
    CHECK_MESSAGE(shown.out.find("(operator)") == std::string::npos, shown.out);
    // Between episodes: how the last one ended is in schedule.last_result, not `stopped`.
    s = wait_status(client, "tick", last_result_is("done"), 10s, "an episode ends done");
    CHECK_MESSAGE(s["stopped"].is_null(), s.dump());
    // Stopped by the operator: now it says so.
    CommandResult stopped = ctl(pkitd, {"stop", "never"});
    CHECK_MESSAGE(stopped.exit_code == 0, stopped.all());
    s = status(client, "never");
    CHECK(s["state"] == "stopped");
    CHECK(s["stopped"] == "operator");
    CHECK(pkitd.stop() == 0);
}
