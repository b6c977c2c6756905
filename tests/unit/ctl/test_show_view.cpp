// `pkitctl show`: the screen built from status, explain and logs, field by field.

#include <doctest/doctest.h>

#include <map>
#include <sstream>

#include "ctl/show_view.hpp"
#include "ctl/time_text.hpp"

using namespace pkit::ctl;
using pkit::proto::json;

namespace {

json base_status(const std::string& state) {
    return json{{"name", "web"},
                {"state", state},
                {"group", nullptr},
                {"pid", nullptr},
                {"run", 0},
                {"started_at", nullptr},
                {"uptime", nullptr},
                {"ready", false},
                {"restarts", 0},
                {"storm_pauses", 0},
                {"liveness_kills", 0},
                {"stopped", nullptr},
                {"next_restart_in", nullptr},
                {"health", nullptr},
                {"notify_status", nullptr},
                {"last_exit", nullptr},
                {"last_launch_error", nullptr},
                {"type", "service"},
                {"resources", nullptr}};
}

json facts() {
    return json{{"command", "/bin/web --port 8080"},
                {"cwd", "/srv"},
                {"user", "www"},
                {"unix_group", nullptr},
                {"after", "db, cache"},
                {"policy", "on_crash"},
                {"within", 60.0},
                {"max_restarts", 5},
                {"restarts_counted", 2},
                {"liveness", "tcp 127.0.0.1:8080 every 10s, timeout 1s, 3 failures"},
                {"readiness", nullptr}};
}

// "  label:  value" lines of the screen, by label.
std::map<std::string, std::string> fields(const std::string& screen) {
    std::map<std::string, std::string> out;
    std::istringstream in(screen);
    std::string line;
    while (std::getline(in, line) && !line.empty()) {
        auto colon = line.find(':');
        if (line.starts_with("  ") && colon != std::string::npos) {
            auto value = line.substr(colon + 1);
            value.erase(0, value.find_first_not_of(' '));
            out[line.substr(2, colon - 2)] = value;
        }
    }
    return out;
}

}  // namespace

TEST_CASE("show view: a running service, field by field") {
    json status = base_status("running");
    status["pid"] = 4242;
    status["run"] = 3;
    status["started_at"] = 1000.0;
    status["uptime"] = 192.0;
    status["ready"] = true;
    status["restarts"] = 2;
    status["group"] = "backend";
    status["health"] = {{"status", "healthy"}, {"failures", 0}};
    status["last_exit"] = {{"code", 1},   {"signal", nullptr},  {"duration", 3.0},
                           {"at", 900.0}, {"timed_out", false}, {"killed_by", nullptr}};
    status["resources"] = {{"processes", 2}, {"cpu_seconds", 1.5}, {"rss_bytes", 3 << 20}};
    json logs{{"lines", json::array({{{"stream", "stdout"}, {"text", "hi"}, {"at", 1100.0}}})},
              {"run", 3},
              {"truncated", false}};
    ShowReplies replies{status, {{"text", "running: run 3."}, {"facts", facts()}}, logs};
    auto screen = render_show(replies, 1192.0, false);
    INFO(screen);
    CHECK(screen.starts_with("web: running\n"));
    auto f = fields(screen);
    CHECK(f["state"] == "running for 3m12s");
    CHECK(f["run"] == "3, pid 4242, started " + clock_text(1000.0));
    CHECK(f["type"] == "service");
    CHECK(f["group"] == "backend");
    CHECK(f["command"] == "/bin/web --port 8080");
    CHECK(f["cwd"] == "/srv");
    CHECK(f["user"] == "www");
    CHECK(f["unix group"] == "-");
    CHECK(f["after"] == "db, cache");
    CHECK(f["restarts"] == "2 (policy on_crash; at most 5 in a 1m window; 2 counted)");
    CHECK(f["last exit"] == "exited with code 1 after 3.0s at " + clock_text(900.0));
    CHECK(f["liveness"] == "tcp 127.0.0.1:8080 every 10s, timeout 1s, 3 failures: healthy");
    CHECK(f["readiness"] == "-");
    CHECK(f["resources"] == "2 processes, CPU 1.5s, memory 3.0M");
    CHECK(f["explain"] == "running: run 3.");
    CHECK(screen.find("last line of output (run 3):\n  " + clock_text(1100.0) + " hi\n") !=
          std::string::npos);
    CHECK(screen.find("\x1b[") == std::string::npos);
    CHECK(render_show(replies, 1192.0, true).starts_with("web: \x1b[32mrunning\x1b[0m\n"));
}

TEST_CASE("show view: an OOM-killed exit and the [resources] pkitd applied, or not") {
    json status = base_status("backoff");
    status["run"] = 2;
    status["last_exit"] = {{"code", nullptr},   {"signal", "SIGKILL"}, {"duration", 3.0},
                           {"at", 900.0},       {"timed_out", false},  {"killed_by", nullptr},
                           {"oom_killed", true}};
    status["resource_limits"] = {
        {"applied", {"cpu_max"}},
        {"not_applied", {{{"key", "memory_max"}, {"reason", "no memory controller"}}}}};
    ShowReplies replies{status, {{"text", "x"}, {"facts", facts()}}, json::object()};
    auto f = fields(render_show(replies, 1000.0, false));
    CHECK(f["last exit"] == "killed by SIGKILL (OOM killer) after 3.0s at " + clock_text(900.0));
    CHECK(f["limits"] == "cpu_max; not applied: memory_max (no memory controller)");
    status["resource_limits"] = nullptr;
    replies.status = status;
    CHECK(fields(render_show(replies, 1000.0, false)).count("limits") == 0);
}

TEST_CASE("show view: backoff, failed and a done oneshot say how long and why") {
    json backoff = base_status("backoff");
    backoff["run"] = 4;
    backoff["restarts"] = 3;
    backoff["next_restart_in"] = 0.8;
    backoff["last_exit"] = {{"code", nullptr}, {"signal", "SIGKILL"}, {"duration", 0.5},
                            {"at", 99.0},      {"timed_out", false},  {"killed_by", "liveness"}};
    CHECK(state_words(backoff, 100.2) == "backoff for 1.2s, restart 3 in 0.80s");
    CHECK(last_exit_words(backoff) ==
          "killed by SIGKILL (liveness) after 0.50s at " + clock_text(99.0));

    json failed = base_status("failed");
    failed["stopped"] = "restarts_exhausted";
    failed["last_exit"] = {{"code", 3},  {"signal", nullptr},  {"duration", 0.1},
                           {"at", 90.0}, {"timed_out", false}, {"killed_by", nullptr}};
    CHECK(state_words(failed, 100.0) == "failed (restarts_exhausted) for 10.0s");

    json launch = base_status("failed");
    launch["last_launch_error"] = "not_found: /nope: No such file or directory";
    CHECK(last_exit_words(launch) == "launch failed: not_found: /nope: No such file or directory");

    json job = base_status("done");
    job["type"] = "oneshot";
    job["stopped"] = "policy_satisfied";
    job["last_exit"] = {{"code", 0},  {"signal", nullptr},  {"duration", 0.2},
                        {"at", 95.0}, {"timed_out", false}, {"killed_by", nullptr}};
    CHECK(state_words(job, 100.0) == "done (policy_satisfied) for 5.0s");
    ShowReplies replies{job,
                        {{"text", "done."}, {"facts", json::object()}},
                        {{"lines", json::array()}, {"run", 1}, {"truncated", false}}};
    auto screen = render_show(replies, 100.0, false);
    auto f = fields(screen);
    CHECK(f["type"] == "oneshot");
    CHECK(f["command"] == "-");
    CHECK(f["resources"] == "-");
    CHECK(f["last exit"] == "exited with code 0 after 0.20s at " + clock_text(95.0));
    CHECK(screen.find("no output from the latest run") != std::string::npos);

    json waiting = base_status("waiting");
    CHECK(state_words(waiting, 100.0) == "waiting");
    CHECK(last_exit_words(waiting) == "none yet");
}

TEST_CASE("show view: a paused service does not claim its uptime as the pause's length") {
    json paused = base_status("paused");
    paused["pid"] = 42;
    paused["run"] = 2;
    paused["uptime"] = 300.0;
    CHECK(state_words(paused, 100.0) == "paused");
    ShowReplies replies{paused,
                        {{"text", "paused by the operator since 00:01:40 UTC (5s ago): run 2."},
                         {"facts", json::object()}},
                        {{"lines", json::array()}, {"run", 2}, {"truncated", false}}};
    CHECK(render_show(replies, 100.0, true).starts_with("web: \x1b[36mpaused\x1b[0m\n"));
}
