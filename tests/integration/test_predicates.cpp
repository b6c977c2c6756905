// Predicates (SPEC §2 [stop_when], [give_up_when]; §3 the gates): a run that matches
// stop_when ends supervision as `predicate`, one that matches give_up_when as
// `gave_up`, and the gates are checked in their order.

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

bool line_starts_with(const json& value, const std::string& prefix) {
    return value.is_string() && value.get<std::string>().rfind(prefix, 0) == 0;
}

// Waits until `svc` ends supervision in `state` and returns its status.
json wait_end(Daemon& pkitd, const std::string& state) {
    Client client = pkitd.client();
    return wait_status(client, "svc", state_is(state), 10s, "supervision ends " + state);
}

}  // namespace

TEST_CASE("predicate stop_when ends supervision after one run with stopped = predicate") {
    TempDir dir;
    std::string script;
    std::string table;
    SUBCASE("exit_codes") {
        script = "exit 3";
        table = "exit_codes = [3]\n";
    }
    SUBCASE("signals") {
        script = "kill -USR1 $$$$";
        table = "signals = [\"SIGUSR1\"]\n";
    }
    SUBCASE("output_matches, on a line the run printed just before it exited") {
        script = "echo starting; echo FATAL: disk full; exit 1";
        table = "output_matches = \"FATAL\"\n";
    }
    dir.service("svc",
                sh_command(script) + restart_table("always", "50ms") + "[stop_when]\n" + table);
    Daemon pkitd(dir);
    pkitd.wait_ready();

    json s = wait_end(pkitd, "failed");
    CHECK(s["stopped"] == "predicate");
    CHECK(s["run"] == 1);
    CHECK(s["restarts"] == 0);
    CHECK(s["pid"].is_null());
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("predicate stop_when matching a clean run ends done, even under policy always") {
    TempDir dir;
    dir.service("svc", sh_command("exit 0") + restart_table("always", "50ms") +
                           "[stop_when]\nexit_codes = [0]\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    json s = wait_end(pkitd, "done");
    CHECK(s["stopped"] == "predicate");
    CHECK(s["run"] == 1);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("predicate give_up_when exit_codes 78 gives up on the first such crash") {
    TempDir dir;
    // Run 1 exits 1 (restarted), run 2 exits 78 (EX_CONFIG: gave up).
    const std::string once = dir.file("once");
    dir.service("svc",
                sh_command("if [ -e " + once + " ]; then exit 78; fi; touch " + once + "; exit 1") +
                    restart_table("on_crash", "50ms") + "[give_up_when]\nexit_codes = [78]\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    json s = wait_end(pkitd, "failed");
    CHECK(s["stopped"] == "gave_up");
    CHECK(s["run"] == 2);
    CHECK(s["restarts"] == 1);
    CHECK(last_exit(s)["code"] == 78);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("predicate give_up_when launch_errors not_found gives up at once with the reason") {
    TempDir dir;
    dir.service("svc", "command = [\"" + dir.file("no-such-binary") + "\"]\n" +
                           restart_table("on_crash", "50ms") +
                           "[give_up_when]\nlaunch_errors = [\"not_found\"]\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    json s = wait_end(pkitd, "failed");
    CHECK(s["stopped"] == "gave_up");
    CHECK(s["run"] == 1);
    CHECK(s["restarts"] == 0);
    CHECK_MESSAGE(line_starts_with(s["last_launch_error"], "not_found: "), s.dump());
    CHECK(s["last_exit"].is_null());
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("predicate give_up_when: a launch failure it does not list is retried with backoff") {
    TempDir dir;
    // autostart = false: the case subscribes to events before the first launch, so
    // that every failure is on the stream however slowly the case gets there.
    dir.service("svc", "command = [\"" + dir.file("no-such-binary") + "\"]\nautostart = false\n" +
                           restart_table("on_crash", "400ms", 1.0, 3) +
                           "[give_up_when]\nlaunch_errors = [\"permission_denied\"]\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    EventStream events(pkitd.socket());
    Client client = pkitd.client();
    json reply = client.request({{"cmd", "start"}, {"services", {"svc"}}});
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    events.until([](const json& e) { return e.value("type", "") == "restarts_exhausted"; }, 10s,
                 "restarts_exhausted");

    std::vector<double> gaps;
    std::optional<double> previous;
    for (const auto& e : events.of_type("exited", "svc")) {
        CHECK_MESSAGE(line_starts_with(e.value("launch_error", json()), "not_found"), e.dump());
        const double at = e.at("at").get<double>();
        if (previous) {
            gaps.push_back(at - *previous);
        }
        previous = at;
    }
    INFO("gaps between launch failures: " << to_string(gaps));
    CHECK(gaps.size() == 3);
    for (double gap : gaps) {
        CHECK(gap >= 0.38);
    }
    for (double delay : restart_delays(events.seen(), "svc")) {
        CHECK(delay == doctest::Approx(0.4).epsilon(0.01));
    }
    json s = status(client, "svc");
    CHECK(s["stopped"] == "restarts_exhausted");
    CHECK(s["run"] == 4);
    CHECK(s["restarts"] == 3);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("predicate gate order: a run matching stop_when and give_up_when ends predicate") {
    TempDir dir;
    dir.service("svc", sh_command("echo FATAL; exit 78") + restart_table("on_crash", "50ms") +
                           "[stop_when]\noutput_matches = \"^FATAL$\"\n" +
                           "[give_up_when]\nexit_codes = [78]\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    json s = wait_end(pkitd, "failed");
    CHECK(s["stopped"] == "predicate");
    CHECK(s["run"] == 1);
    CHECK(last_exit(s)["code"] == 78);

    Client client = pkitd.client();
    json reply = client.request({{"cmd", "explain"}, {"service", "svc"}});
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    const std::string text = reply["result"]["text"].get<std::string>();
    CHECK_MESSAGE(text.find("stop_when.output_matches") != std::string::npos, text);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("predicate output_matches searches only the ended run's own output") {
    TempDir dir;
    // Run 1 prints the pattern and exits clean (give_up_when is not consulted for a
    // clean run); run 2 crashes silently: the FATAL of run 1 must not make it give up.
    const std::string once = dir.file("once");
    dir.service("svc", sh_command("if [ -e " + once + " ]; then exit 1; fi; touch " + once +
                                  "; echo FATAL; exit 0") +
                           restart_table("always", "50ms", 1.0, 1) +
                           "[give_up_when]\noutput_matches = \"FATAL\"\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    json s = wait_end(pkitd, "failed");
    CHECK(s["stopped"] == "restarts_exhausted");
    CHECK(s["run"] == 3);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("predicate give_up_when signals and output_matches on stderr give up") {
    TempDir dir;
    SUBCASE("signals") {
        dir.service("svc", sh_command("kill -TERM $$$$") + restart_table("on_crash", "50ms") +
                               "[give_up_when]\nsignals = [\"TERM\"]\n");
    }
    SUBCASE("output_matches on a stderr line") {
        dir.service("svc", sh_command("echo 'bad config: port' >&2; exit 2") +
                               restart_table("on_crash", "50ms") +
                               "[give_up_when]\noutput_matches = \"^bad config: \"\n");
    }
    Daemon pkitd(dir);
    pkitd.wait_ready();
    json s = wait_end(pkitd, "failed");
    CHECK(s["stopped"] == "gave_up");
    CHECK(s["run"] == 1);
    CHECK(pkitd.stop() == 0);
}
