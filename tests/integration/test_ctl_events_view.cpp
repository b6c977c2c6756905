// pkitctl events for people (SPEC §10): one aligned line per event with a local time,
// the service and only the fields that carry something (never "null"); the --service
// and --type filters; --json keeps the protocol's objects unchanged.

#include <signal.h>

#include <regex>
#include <sstream>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// Whether some line has the subject `who` and then contains `words`.
bool has_event_line(const std::string& text, const std::string& who, const std::string& words) {
    const std::regex head("^\\d\\d:\\d\\d:\\d\\d\\.\\d\\d\\d " + who + " +");
    for (const auto& line : lines_of(text)) {
        std::smatch m;
        if (std::regex_search(line, m, head) && line.find(words, m.length()) != std::string::npos) {
            return true;
        }
    }
    return false;
}

}  // namespace

TEST_CASE("ctl events: a line per event type without null, filters, --json as the protocol's") {
    TempDir dir;
    dir.service("limited",
                sh_command(gate(dir) + "exit 1") + restart_table("on_crash", "100ms", 2.0, 1));
    dir.service("quitter",
                sh_command(gate(dir) + "exit 78") + "[give_up_when]\nexit_codes = [78]\n");
    dir.service("sick", sh_command(gate(dir) + "exec sleep 1000") + restart_table("never", "1s") +
                            "[health]\nexec = [\"/bin/sh\", \"-c\", " +
                            toml_str("! test -e " + dir.file("go")) +
                            "]\ninterval = \"200ms\"\nfailures = 1\n");
    dir.service("web", sh_command("exec sleep 1000"));
    dir.service("prompt", sh_command("exec sleep 1000") + "[ready]\nexec = [\"test\", \"-e\", " +
                              toml_str(dir.file("go")) + "]\ninterval = \"100ms\"\n");
    dir.service("crash", sh_command("exit 1") + restart_table("on_crash", "300ms", 1.0) +
                             "[storm]\npause = \"500ms\"\nthreshold = 2.0\n");
    // Killed last: its group fails at once, and the root escalates (pkitd exits 1).
    dir.daemon_config("[groups.g]\nmembers = [\"doomed\"]\nmax_restarts = 0\n");
    dir.service("doomed", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    EventStream raw(pkitd.socket());

    const std::string sock = pkitd.socket();
    BackgroundCtl text({"--socket", sock, "events"}, dir.file("text.out"), dir.file("text.err"));
    BackgroundCtl as_json({"--socket", sock, "--json", "events"}, dir.file("json.out"),
                          dir.file("json.err"));
    BackgroundCtl filtered({"--socket", sock, "events", "--service", "crash", "--service",
                            "quitter", "--type", "exited"},
                           dir.file("filtered.out"), dir.file("filtered.err"));
    const auto shown = [&] {
        return "text:\n" + read_file(dir.file("text.out")) + read_file(dir.file("text.err")) +
               "json:\n" + read_file(dir.file("json.out")) + read_file(dir.file("json.err")) +
               "filtered:\n" + read_file(dir.file("filtered.out")) +
               read_file(dir.file("filtered.err"));
    };
    // Once a reload's event shows in the text and json views, and one of crash's exits
    // (it loops from the start, ungated) in the filtered view, which shows no reload,
    // all three are subscribed: then the gate opens. Without the third, a loaded machine
    // started the filtered view after quitter's exit.
    wait_for(
        [&] {
            REQUIRE(run_ctl({"--socket", sock, "reload"}).exit_code == 0);
            return has_event_line(read_file(dir.file("text.out")), "pkitd", "reload") &&
                   read_file(dir.file("json.out")).find("\"reload\"") != std::string::npos &&
                   has_event_line(read_file(dir.file("filtered.out")), "crash", "exited code 1");
        },
        10s, "all three views subscribed", shown);
    open_gate(dir);
    wait_status(client, "limited", state_is("failed"), 10s, "limited exhausted its restarts");
    wait_status(client, "quitter", state_is("failed"), 10s, "quitter gave up");
    wait_status(client, "sick", state_is("failed"), 10s, "sick killed by liveness");
    // crash loops on its own clock: wait for its pause and an exit in the views rather
    // than hope they fall before web's stop.
    wait_for(
        [&] {
            return has_event_line(read_file(dir.file("text.out")), "crash", "storm pause") &&
                   has_event_line(read_file(dir.file("filtered.out")), "crash", "exited code 1");
        },
        10s, "crash's storm pause and an exit shown", shown);
    REQUIRE(run_ctl({"--socket", sock, "stop", "web"}).exit_code == 0);
    raw.until([](const json& e) { return e["type"] == "stopped" && e["service"] == "web"; }, 10s,
              "web stopped");

    const std::vector<std::pair<std::string, std::string>> expected{
        {"limited", "started pid "},
        {"prompt", "ready (run 1)"},
        {"crash", "storm pause: restarts wait 0.50s"},
        {"limited", "exited code 1 after "},
        {"limited", "restarting in 0.10s (restart 1)"},
        {"limited", "restarts exhausted"},
        {"quitter", "exited code 78 after "},
        {"quitter", "gave up"},
        {"sick", "health unhealthy"},
        {"sick", "liveness kill"},
        {"sick", "(liveness) after "},
        {"web", "stopped"},
        {"pkitd", "reload"},
    };
    wait_for(
        [&] {
            return has_event_line(read_file(dir.file("text.out")), "web", "stopped") &&
                   read_file(dir.file("json.out")).find("\"web\"") != std::string::npos;
        },
        10s, "web's stop printed", shown);
    const std::string text_out = read_file(dir.file("text.out"));
    INFO(shown());
    for (const auto& [who, words] : expected) {
        CHECK_MESSAGE(has_event_line(text_out, who, words), who << " " << words);
    }
    // Every line: a time, a padded subject ("limited" is the longest name), words, no null.
    const std::regex form("^\\d\\d:\\d\\d:\\d\\d\\.\\d\\d\\d [a-z]+ +[a-z].*$");
    for (const auto& line : lines_of(text_out)) {
        CHECK_MESSAGE(std::regex_match(line, form), line);
        CHECK_MESSAGE(line.find("null") == std::string::npos, line);
        CHECK_MESSAGE(line.find("=") == std::string::npos, line);
        CHECK(line.substr(13, 8).back() == ' ');  // "limited" padded: words start at 21
    }

    // --json: each object exactly as the protocol streamed it.
    const auto raw_seen = raw.seen();
    int compared = 0;
    for (const auto& line : lines_of(read_file(dir.file("json.out")))) {
        // The raw stream subscribed first and read up to web's stop: it saw them all.
        const json event = json::parse(line);
        CHECK_MESSAGE(std::find(raw_seen.begin(), raw_seen.end(), event) != raw_seen.end(),
                      "not in the protocol's stream: " << line);
        ++compared;
        if (event["type"] == "stopped" && event["service"] == "web") {
            break;
        }
    }
    CHECK(compared >= 10);

    // --service crash --service quitter --type exited: only those.
    wait_for(
        [&] { return has_event_line(read_file(dir.file("filtered.out")), "quitter", "exited"); },
        10s, "quitter's exit in the filtered view", shown);
    for (const auto& line : lines_of(read_file(dir.file("filtered.out")))) {
        CHECK_MESSAGE(std::regex_search(line, std::regex("^\\S+ (crash|quitter) +exited code ")),
                      line);
    }
    CHECK(has_event_line(read_file(dir.file("filtered.out")), "crash", "exited code 1"));

    auto bad_type = run_ctl({"--socket", sock, "events", "--type", "exploded"});
    CHECK(bad_type.exit_code == 2);
    filtered.signal(SIGINT);
    CHECK(filtered.wait_exit(5s) == std::optional<int>(0));

    // The last two types: group_failed and escalated; pkitd then exits 1 and the
    // subscribers end by themselves.
    REQUIRE(run_ctl({"--socket", sock, "signal", "doomed", "KILL"}).exit_code == 0);
    CHECK(pkitd.wait_exit(15s) == std::optional<int>(1));
    for (auto* ctl : {&text, &as_json}) {
        CHECK(ctl->wait_exit(10s) == std::optional<int>(0));
    }
    const std::string end = read_file(dir.file("text.out"));
    CHECK_MESSAGE(has_event_line(end, "g/", "failed"), end);
    CHECK_MESSAGE(has_event_line(end, "pkitd", "escalated"), end);
    for (const auto& line : lines_of(end)) {
        CHECK_MESSAGE(line.find("null") == std::string::npos, line);
    }
}
