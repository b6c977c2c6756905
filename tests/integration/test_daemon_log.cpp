// pkitd's own log on stderr (SPEC §1 --log-format): one line an event, in text
// ("pkitd: NAME: ...") or as one JSON object a line. A crashing service with a backoff
// and max_restarts = 1 logs its starts (pid, run), exits (code, duration), the restart
// (delay) and one line saying why supervision ended, in plain words ("failed: restarts
// exhausted (1 of 1)"); give_up_when logs a gave_up line with its reason; an operator's
// stop logs how the run ended ("ended by SIGTERM") and "stopped on request".

#include <algorithm>
#include <cmath>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// crash: two runs of `sleep 0.2; exit 3` 100 ms apart, then restarts_exhausted.
// quitter: exit 78, matched by [give_up_when]. held: runs until it is stopped.
void three_services(const TempDir& dir) {
    dir.service("crash",
                sh_command("sleep 0.2; exit 3") + restart_table("on_crash", "100ms", 1.0, 1));
    dir.service("quitter", sh_command("exit 78") + restart_table("always", "50ms") +
                               "[give_up_when]\nexit_codes = [78]\n");
    dir.service("held", sh_command("exec sleep 1000"));
}

// Waits until the services have reached their ends (held: running).
void wait_ends(Client& client) {
    json crash = wait_status(client, "crash", state_is("failed"), 10s, "crash: restarts exhausted");
    CHECK(crash["stopped"] == "restarts_exhausted");
    CHECK(crash["run"] == 2);
    json quitter = wait_status(client, "quitter", state_is("failed"), 10s, "quitter gives up");
    CHECK(quitter["stopped"] == "gave_up");
    CHECK(quitter["run"] == 1);
    wait_status(client, "held", state_is("running"), 10s, "held runs");
}

// Indices of the lines matching `re` (whole line).
std::vector<std::size_t> matching(const std::vector<std::string>& lines, const std::string& re) {
    const std::regex pattern(re);
    std::vector<std::size_t> found;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        if (std::regex_match(lines[i], pattern)) {
            found.push_back(i);
        }
    }
    return found;
}

bool has_line(const std::string& log, const std::string& re) {
    return !matching(nonempty_lines(log), re).empty();
}

// The parsed lines of a JSON log; a line that does not parse is null.
std::vector<json> parsed(const std::string& log) {
    std::vector<json> out;
    for (const auto& line : nonempty_lines(log)) {
        out.push_back(json::parse(line, nullptr, false));
    }
    return out;
}

// The JSON events of `type` for `service`, in order.
std::vector<json> events_of(const std::vector<json>& lines, const std::string& type,
                            const std::string& service) {
    std::vector<json> found;
    for (const auto& j : lines) {
        if (j.is_object() && j.value("type", "") == type && j.contains("service") &&
            j["service"] == service) {
            found.push_back(j);
        }
    }
    return found;
}

// j[key], or null when j has no such key (operator[] of a const json must not miss).
json field(const json& j, const std::string& key) {
    return j.is_object() && j.contains(key) ? j.at(key) : json();
}

bool has_event(const std::string& log, const std::string& type, const std::string& service) {
    return !events_of(parsed(log), type, service).empty();
}

}  // namespace

TEST_CASE("daemon log in text: started, exited, restarting, restarts exhausted, gave up, stopped") {
    TempDir dir;
    three_services(dir);
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_ends(client);

    const auto stopped = run_ctl({"--socket", pkitd.socket(), "stop", "held"});
    REQUIRE_MESSAGE(stopped.exit_code == 0, stopped.all());
    wait_status(client, "held", state_is("stopped"), 10s, "held is stopped");

    // The log is written asynchronously: wait for the last line of each service.
    wait_for(
        [&] {
            const std::string log = pkitd.log();
            return has_line(log, "pkitd: crash: failed: restarts exhausted .*") &&
                   has_line(log, "pkitd: quitter: failed: .*") &&
                   has_line(log, "pkitd: held: stopped.*");
        },
        10s, "the end lines of crash, quitter and held in pkitd's log",
        [&] { return pkitd.log(); });
    const std::vector<std::string> lines = nonempty_lines(pkitd.log());
    INFO("pkitd's log:\n" << pkitd.log());

    // crash: started (pid, run) twice, exited (code, duration) twice, one restarting
    // (delay), one line for the end with the last exit.
    const auto started1 = matching(lines, R"(pkitd: crash: started \(pid [1-9][0-9]*, run 1\))");
    const auto started2 = matching(lines, R"(pkitd: crash: started \(pid [1-9][0-9]*, run 2\))");
    const std::string exited_re = R"(pkitd: crash: exited with code 3 after ([0-9.e+-]+)s \(run )";
    const auto exited1 = matching(lines, exited_re + R"(1\))");
    const auto exited2 = matching(lines, exited_re + R"(2\))");
    const auto restarting = matching(lines, R"(pkitd: crash: restarting in .*)");
    const auto exhausted = matching(lines, R"(pkitd: crash: failed: restarts exhausted .*)");
    REQUIRE(started1.size() == 1);
    REQUIRE(started2.size() == 1);
    REQUIRE(exited1.size() == 1);
    REQUIRE(exited2.size() == 1);
    REQUIRE(restarting.size() == 1);
    REQUIRE(exhausted.size() == 1);
    CHECK(matching(lines, R"(pkitd: crash: started .*)").size() == 2);
    CHECK(matching(lines, R"(pkitd: crash: exited .*)").size() == 2);
    CHECK(lines[restarting[0]] == "pkitd: crash: restarting in 0.1s (restart 1)");
    // Each run slept 0.2 s: the duration is its run time.
    for (std::size_t at : {exited1[0], exited2[0]}) {
        std::smatch m;
        REQUIRE(std::regex_search(lines[at], m, std::regex(exited_re)));
        const double duration = std::stod(m[1].str());
        CHECK_MESSAGE(duration >= 0.15, lines[at]);
        CHECK_MESSAGE(duration < 5.0, lines[at]);
    }
    // Why supervision ended, in plain words (the exit is on the line before).
    CHECK(lines[exhausted[0]] == "pkitd: crash: failed: restarts exhausted (1 of 1)");
    // In the order they happened.
    CHECK(started1[0] < exited1[0]);
    CHECK(exited1[0] < restarting[0]);
    CHECK(restarting[0] < started2[0]);
    CHECK(started2[0] < exited2[0]);
    CHECK(exited2[0] < exhausted[0]);

    // quitter: its exit, then one gave_up line with the reason and the last exit.
    const auto quitter_exit =
        matching(lines, R"(pkitd: quitter: exited with code 78 after [0-9.e+-]+s \(run 1\))");
    const auto gave_up = matching(lines, R"(pkitd: quitter: failed: .*)");
    REQUIRE(quitter_exit.size() == 1);
    REQUIRE(gave_up.size() == 1);
    CHECK(quitter_exit[0] < gave_up[0]);
    CHECK(lines[gave_up[0]].find("gave up") != std::string::npos);
    CHECK(lines[gave_up[0]].find("exit 78") != std::string::npos);
    CHECK(lines[gave_up[0]].find("give_up_when.exit_codes") != std::string::npos);
    CHECK(matching(lines, R"(pkitd: quitter: restarting .*)").empty());

    // held: started, then stopped on request: its run ended by the stop signal, which
    // is no crash and no "killed by".
    const auto held_started = matching(lines, R"(pkitd: held: started \(pid [1-9][0-9]*, run 1\))");
    const auto held_ended =
        matching(lines, R"(pkitd: held: ended by SIGTERM \(run 1, [0-9.e+-]+s\))");
    const auto held_stopped =
        matching(lines, R"(pkitd: held: stopped on request \(ended by SIGTERM\))");
    REQUIRE(held_ended.size() == 1);
    CHECK(held_ended[0] < held_stopped.at(0));
    REQUIRE(held_started.size() == 1);
    REQUIRE(held_stopped.size() == 1);
    CHECK(held_started[0] < held_stopped[0]);
    CHECK(matching(lines, R"(pkitd: held: restarting .*)").empty());

    CHECK(pkitd.stop() == 0);
}

TEST_CASE("daemon log with --log-format json: one JSON object a line, events with their fields") {
    TempDir dir;
    three_services(dir);
    Daemon pkitd(dir, {.extra_args = {"--log-format", "json"}});
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_ends(client);

    json reply = client.request({{"cmd", "stop"}, {"services", {"held"}}});
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    wait_status(client, "held", state_is("stopped"), 10s, "held is stopped");

    wait_for(
        [&] {
            const std::string log = pkitd.log();
            return has_event(log, "restarts_exhausted", "crash") &&
                   has_event(log, "gave_up", "quitter") && has_event(log, "stopped", "held");
        },
        10s, "the end events of crash, quitter and held in pkitd's log",
        [&] { return pkitd.log(); });
    // Shutting down logs too: every line, up to pkitd's exit, is one JSON object.
    CHECK(pkitd.stop() == 0);
    const std::string log = pkitd.log();
    INFO("pkitd's log:\n" << log);
    const std::vector<json> lines = parsed(log);
    REQUIRE(!lines.empty());
    for (const auto& j : lines) {
        REQUIRE_MESSAGE(j.is_object(), "a line that is not a JSON object: " << j.dump());
        CHECK_MESSAGE(field(j, "at").is_number(), j.dump());
        CHECK_MESSAGE(field(j, "level").is_string(), j.dump());
        CHECK_MESSAGE(field(j, "msg").is_string(), j.dump());
        if (j.contains("type")) {
            // An event: its type and the service it is about (null for the daemon's own).
            CHECK_MESSAGE(field(j, "type").is_string(), j.dump());
            CHECK_MESSAGE(j.contains("service"), j.dump());
        }
        // A line about one of the services names it in `service`, with its `type`.
        for (const std::string name : {"crash", "quitter", "held"}) {
            const json msg = field(j, "msg");
            if (msg.is_string() && msg.get<std::string>().rfind(name + ": ", 0) == 0) {
                CHECK_MESSAGE(field(j, "service") == name, j.dump());
                CHECK_MESSAGE(field(j, "type").is_string(), j.dump());
            }
        }
    }

    // crash: started (pid, run) twice, exited (code, duration) twice, one restarting
    // (delay), one restarts_exhausted with the last exit in its reason.
    auto started = events_of(lines, "started", "crash");
    auto exited = events_of(lines, "exited", "crash");
    auto restarting = events_of(lines, "restarting", "crash");
    auto exhausted = events_of(lines, "restarts_exhausted", "crash");
    REQUIRE(started.size() == 2);
    REQUIRE(exited.size() == 2);
    REQUIRE(restarting.size() == 1);
    REQUIRE(exhausted.size() == 1);
    for (int i = 0; i < 2; ++i) {
        CHECK(started[i]["run"] == i + 1);
        CHECK(started[i]["pid"].is_number_integer());
        CHECK(started[i]["pid"].get<long>() > 0);
        CHECK(exited[i]["run"] == i + 1);
        CHECK(exited[i]["code"] == 3);
        CHECK(exited[i]["signal"].is_null());
        REQUIRE(exited[i]["duration"].is_number());
        CHECK(exited[i]["duration"].get<double>() >= 0.15);
        CHECK(exited[i]["duration"].get<double>() < 5.0);
        CHECK(started[i]["at"].get<double>() <= exited[i]["at"].get<double>());
    }
    REQUIRE(restarting[0]["delay"].is_number());
    CHECK(std::fabs(restarting[0]["delay"].get<double>() - 0.1) < 1e-6);
    CHECK(restarting[0]["restart"] == 1);
    CHECK(restarting[0]["msg"] == "crash: restarting in 0.1s (restart 1)");
    REQUIRE(exhausted[0]["reason"].is_string());
    const std::string why = exhausted[0]["reason"];
    CHECK(why.find("exit 3") != std::string::npos);
    CHECK(why.find("1 of 1 restart used") != std::string::npos);
    CHECK(exhausted[0]["msg"] == "crash: failed: restarts exhausted (1 of 1)");

    // quitter: exited 78, then gave_up with the reason and the last exit.
    auto quitter_exit = events_of(lines, "exited", "quitter");
    auto gave_up = events_of(lines, "gave_up", "quitter");
    REQUIRE(quitter_exit.size() == 1);
    REQUIRE(gave_up.size() == 1);
    CHECK(quitter_exit[0]["code"] == 78);
    REQUIRE(gave_up[0]["reason"].is_string());
    const std::string gave_up_why = gave_up[0]["reason"];
    CHECK(gave_up_why.find("exit 78") != std::string::npos);
    CHECK(gave_up_why.find("give_up_when.exit_codes") != std::string::npos);
    CHECK(events_of(lines, "restarting", "quitter").empty());

    // held: started, then stopped on request.
    REQUIRE(events_of(lines, "started", "held").size() == 1);
    auto held_stopped = events_of(lines, "stopped", "held");
    REQUIRE(held_stopped.size() == 1);
    CHECK(held_stopped[0]["reason"] == "stopped on request");
    CHECK(held_stopped[0]["msg"] == "held: stopped on request (ended by SIGTERM)");
}
