// `pkitctl events` for people: one line per event type, never a "null", the
// --service/--type filters, and the name column's alignment.

#include <doctest/doctest.h>

#include <string>

#include "ctl/event_line.hpp"
#include "ctl/time_text.hpp"

using pkit::ctl::clock_text;
using pkit::ctl::event_line;
using pkit::ctl::event_subject;
using pkit::ctl::event_types;
using pkit::ctl::event_words;
using pkit::ctl::EventFilter;
using pkit::proto::json;

namespace {

// An event as pkitd sends it: every field of SPEC §9, nulls included.
json event(const std::string& type, json extra = json::object()) {
    json e{{"type", type}, {"service", "web"}, {"group", nullptr}, {"at", 1700000000.512}};
    e.update(extra);
    return e;
}

}  // namespace

TEST_CASE("event words: each type says what happened with the fields that carry something") {
    CHECK(event_words(event("started", {{"pid", 1234}, {"run", 4}})) == "started pid 1234 (run 4)");
    CHECK(event_words(event("ready", {{"run", 4}})) == "ready (run 4)");
    CHECK(event_words(event("exited", {{"code", 1},
                                       {"signal", nullptr},
                                       {"duration", 3.0},
                                       {"timed_out", false},
                                       {"killed_by", nullptr},
                                       {"launch_error", nullptr},
                                       {"run", 4}})) == "exited code 1 after 3.0s (run 4)");
    CHECK(event_words(event("exited", {{"code", nullptr},
                                       {"signal", "SIGKILL"},
                                       {"duration", 0.25},
                                       {"timed_out", false},
                                       {"killed_by", "liveness"},
                                       {"launch_error", nullptr},
                                       {"run", 2}})) ==
          "killed by SIGKILL (liveness) after 0.25s (run 2)");
    CHECK(event_words(event("exited", {{"code", 124}, {"timed_out", true}, {"duration", 61.0}})) ==
          "exited code 124 (timeout) after 1m1s");
    CHECK(event_words(event("exited", {{"code", nullptr},
                                       {"signal", nullptr},
                                       {"duration", 0.0},
                                       {"launch_error", "not_found: /nope: No such file"},
                                       {"run", 3}})) ==
          "launch failed: not_found: /nope: No such file (run 3)");
    CHECK(event_words(event("restarting", {{"delay", 0.4}, {"restart", 2}})) ==
          "restarting in 0.40s (restart 2)");
    CHECK(event_words(event("storm_pause", {{"pause", 10.0}})) ==
          "storm pause: restarts wait 10.0s");
    CHECK(event_words(event("liveness_kill")) == "liveness kill");
    CHECK(event_words(event("health", {{"status", "unhealthy"}, {"reason", "unhealthy"}})) ==
          "health unhealthy");
    CHECK(event_words(event("stopped", {{"reason", "operator"}})) == "stopped: operator");
    CHECK(event_words(event("gave_up", {{"reason", "exit 78 matched"}})) ==
          "gave up: exit 78 matched");
    CHECK(event_words(event("gave_up", {{"reason", "gave up: exit 78 matched"}})) ==
          "gave up: exit 78 matched");
    CHECK(event_words(event("restarts_exhausted", {{"reason", "5 of 5"}})) ==
          "restarts exhausted: 5 of 5");
    CHECK(event_words(event("group_failed", {{"service", nullptr}, {"group", "backend"}})) ==
          "failed");
    CHECK(event_words(event("escalated", {{"service", nullptr}, {"reason", "group backend"}})) ==
          "escalated: group backend");
    CHECK(event_words(event("reload", {{"service", nullptr}})) == "reload");
    // A type this pkitctl does not know: its name and its non-null fields.
    CHECK(event_words(event("frozen", {{"for", 3}, {"why", nullptr}})) == "frozen for=3");
}

TEST_CASE("event lines: no type renders a null, each starts with the local time") {
    json full_nulls = {{"pid", nullptr},       {"run", nullptr},          {"code", nullptr},
                       {"signal", nullptr},    {"duration", nullptr},     {"delay", nullptr},
                       {"restart", nullptr},   {"pause", nullptr},        {"status", nullptr},
                       {"killed_by", nullptr}, {"launch_error", nullptr}, {"reason", nullptr}};
    for (const auto& type : event_types()) {
        auto line = event_line(event(type, full_nulls), 8);
        INFO(line);
        CHECK(line.find("null") == std::string::npos);
        CHECK(line.starts_with(clock_text(1700000000.512) + " web      "));
        CHECK(line.size() > 22);  // words after the padded name
    }
}

TEST_CASE("event lines: the subject column is the service, GROUP/ or pkitd, padded") {
    CHECK(event_subject(event("started")) == "web");
    CHECK(event_subject(event("group_failed", {{"service", nullptr}, {"group", "backend"}})) ==
          "backend/");
    CHECK(event_subject(event("reload", {{"service", nullptr}})) == "pkitd");
    auto a = event_line(event("ready", {{"run", 1}}), 10);
    auto b = event_line(event("group_failed", {{"service", nullptr}, {"group", "db"}}), 10);
    CHECK(a.find("ready") == b.find("failed"));
    CHECK(clock_text(1700000000.512).ends_with(".512"));
    CHECK(clock_text(1700000000.0).size() == 12);
}

TEST_CASE("event filter: --service and --type, each repeatable, both must match") {
    EventFilter all;
    CHECK(all.matches(event("started")));
    EventFilter services{.services = {"db", "web"}};
    CHECK(services.matches(event("started")));
    CHECK_FALSE(services.matches(event("started", {{"service", "worker"}})));
    CHECK_FALSE(services.matches(event("reload", {{"service", nullptr}})));
    EventFilter types{.types = {"exited", "ready"}};
    CHECK(types.matches(event("exited")));
    CHECK_FALSE(types.matches(event("started")));
    EventFilter both{.services = {"db"}, .types = {"exited"}};
    CHECK_FALSE(both.matches(event("exited")));
    CHECK(both.matches(event("exited", {{"service", "db"}})));
    CHECK_FALSE(both.matches(event("started", {{"service", "db"}})));
}

TEST_CASE("event filter: --service NAME matches its instances NAME@I, and NAME@I only that one") {
    EventFilter set{.services = {"web"}};
    CHECK(set.matches(event("started", {{"service", "web@2"}})));
    CHECK_FALSE(set.matches(event("started", {{"service", "webx@1"}})));
    EventFilter one{.services = {"web@2"}};
    CHECK(one.matches(event("started", {{"service", "web@2"}})));
    CHECK_FALSE(one.matches(event("started", {{"service", "web@1"}})));
    CHECK_FALSE(one.matches(event("started")));
}

TEST_CASE("event words: paused and resumed say who froze the run and for how long") {
    CHECK(event_words(event("paused", {{"run", 3}, {"reason", nullptr}})) ==
          "paused by the operator (run 3)");
    CHECK(event_words(event("resumed", {{"run", 3}, {"reason", "after 12s paused"}})) ==
          "resumed: after 12s paused (run 3)");
    const auto& types = event_types();
    CHECK(std::find(types.begin(), types.end(), "paused") != types.end());
    CHECK(std::find(types.begin(), types.end(), "resumed") != types.end());
}

TEST_CASE("event words: log_error says what failed without repeating the service") {
    json e = event("log_error", {{"reason",
                                  "web: log file /var/log/web.log: No space left "
                                  "on device; lines are dropped"}});
    CHECK(event_words(e) ==
          "log error: log file /var/log/web.log: No space left on device; lines are dropped");
    const auto& types = event_types();
    CHECK(std::find(types.begin(), types.end(), "log_error") != types.end());
}
