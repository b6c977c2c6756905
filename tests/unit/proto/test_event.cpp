// The typed event object of SPEC §9: the fields of its type only, nulls where the
// protocol writes them.

#include "tests/unit/proto/proto_doctest.hpp"

#include "proto/event.hpp"

using namespace pkit::proto;

TEST_CASE("an exited event carries the exit without its `at`, and launch_error") {
    Event event;
    event.type = "exited";
    event.service = "web";
    event.at = 12.5;
    event.run = 3;
    event.exited = ExitedFields{ExitInfo{{}, "SIGKILL", 2.0, 12.0, true, "timeout"}, {}};
    CHECK(json(event) == json{{"type", "exited"},
                              {"service", "web"},
                              {"group", nullptr},
                              {"at", 12.5},
                              {"run", 3},
                              {"code", nullptr},
                              {"signal", "SIGKILL"},
                              {"duration", 2.0},
                              {"timed_out", true},
                              {"killed_by", "timeout"},
                              {"oom_killed", false},
                              {"launch_error", nullptr}});
    event.exited->exit->oom_killed = true;
    CHECK(json(event)["oom_killed"] == true);
}

TEST_CASE("an exited event without a process has null code and signal and no timed_out") {
    Event event;
    event.type = "exited";
    event.service = "web";
    event.run = 1;
    event.exited = ExitedFields{std::nullopt, "not_found: /x: No such file or directory"};
    const json written = event;
    CHECK(written["code"].is_null());
    CHECK(written["signal"].is_null());
    CHECK(written["duration"] == 0.0);
    CHECK_FALSE(written.contains("timed_out"));
    CHECK(written["launch_error"] == "not_found: /x: No such file or directory");
}

TEST_CASE("an event writes only its own type's fields") {
    Event event;
    event.type = "restarting";
    event.service = "web";
    event.group = "backend";
    event.delay = 0.5;
    event.restart = 2;
    CHECK(json(event) == json{{"type", "restarting"},
                              {"service", "web"},
                              {"group", "backend"},
                              {"at", 0.0},
                              {"delay", 0.5},
                              {"restart", 2}});
    Event reload;
    reload.type = "reload";
    reload.reason = "1 added";
    CHECK(json(reload) == json{{"type", "reload"},
                               {"service", nullptr},
                               {"group", nullptr},
                               {"at", 0.0},
                               {"reason", "1 added"}});
}
