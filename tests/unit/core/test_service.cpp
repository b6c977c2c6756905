// The Service state machine on its own: the life of a crashing run, clean exits and
// success_codes, how supervision ends, run timeouts and group cleanup.

#include <doctest/doctest.h>

#include "daemon/core/service.hpp"
#include "tests/unit/core/fake.hpp"

namespace pkit::core {
namespace {

using namespace test;

TEST_CASE("a crashing service: started, exited, restarting with a growing delay") {
    Driver d(spec("web"));
    CHECK(d.svc.state() == State::stopped);
    CHECK(d.start(at(0)) == 100);
    CHECK(d.take() == "spawn 0 r1 | started web r1 pid 100");
    CHECK(d.svc.state() == State::running);
    CHECK(d.svc.ready());

    d.exit(at(1), exited(1));
    CHECK(d.take() ==
          "exited web r1 code 1 | cleanup 0 pgid 100 TERM grace 5000ms | "
          "restarting web r1 in 200ms #1");
    CHECK(d.svc.state() == State::backoff);
    CHECK(d.svc.restarts() == 1);
    CHECK_FALSE(d.svc.has_process());
    CHECK(seconds(d.svc.next_deadline()) == 1.2);

    d.svc.on_time(at(1.1), d.out);
    CHECK(d.svc.state() == State::backoff);
    d.svc.on_time(at(1.2), d.out);
    CHECK(d.svc.state() == State::waiting);
    CHECK(d.take() == "");
    CHECK(d.relaunch(at(1.2)) == 101);
    CHECK(d.take() == "spawn 0 r2 | started web r2 pid 101");

    d.exit(at(1.5), killed(SIGSEGV));
    CHECK(d.take() ==
          "exited web r2 signal 11 | cleanup 0 pgid 101 TERM grace 5000ms | "
          "restarting web r2 in 400ms #2");
    CHECK(d.svc.restarts() == 2);
}

TEST_CASE("the started event is stamped with the launch, not with the exec's report") {
    Driver d(spec("web"));
    d.svc.want_up(at(2), d.out, true);
    d.svc.launch(at(2), d.out);
    d.svc.on_spawned(d.svc.run(), 100, at(2.25), d.out);
    auto started = events_of(d.out, EventType::started);
    REQUIRE(started.size() == 1);
    CHECK(started[0].at == 1002.0);
    CHECK(d.svc.started_wall() == 1002.0);
}

TEST_CASE("the exited event and last_exit record the run") {
    Driver d(spec("web"));
    d.start(at(2));
    d.out.clear();
    d.exit(at(5.5), exited(3));
    auto exited_events = events_of(d.out, EventType::exited);
    REQUIRE(exited_events.size() == 1);
    const Event& e = exited_events[0];
    CHECK(e.pid == 100);
    CHECK(e.at == 1005.5);
    REQUIRE(e.exit);
    CHECK(e.exit->code == 3);
    CHECK(e.exit->signal == std::nullopt);
    CHECK(e.exit->duration == 3500ms);
    CHECK_FALSE(e.exit->timed_out);
    CHECK(e.exit->killed_by == KilledBy::none);
    REQUIRE(d.svc.last_exit());
    CHECK(d.svc.last_exit()->code == 3);
    CHECK(d.svc.last_exit()->at == 1005.5);
    CHECK(d.svc.started_wall() == 1002.0);
}

TEST_CASE("success_codes decide what a clean exit is") {
    config::ServiceSpec s = spec("job");
    SUBCASE("a listed code is clean: on_crash ends done") {
        s.success_codes = {0, 3};
        Driver d(s);
        d.start(at(0));
        d.take();
        d.exit(at(1), exited(3));
        CHECK(d.take() ==
              "exited job r1 code 3 | cleanup 0 pgid 100 TERM grace 5000ms | "
              "stopped job r1");
        CHECK(d.svc.state() == State::done);
        CHECK(d.svc.stopped_reason() == StopReason::policy_satisfied);
        CHECK(d.svc.restarts() == 0);
    }
    SUBCASE("0 is a crash when not listed") {
        s.success_codes = {3};
        Driver d(s);
        d.start(at(0));
        d.take();
        d.exit(at(1), exited(0));
        CHECK(d.svc.state() == State::backoff);
        CHECK(d.svc.restarts() == 1);
    }
    SUBCASE("death by a signal is never clean") {
        s.success_codes = {0};
        Driver d(s);
        d.start(at(0));
        d.exit(at(1), killed(SIGTERM));
        CHECK(d.svc.state() == State::backoff);
    }
}

TEST_CASE("ended supervision: done after a clean run, failed after a crash") {
    config::ServiceSpec s = spec("web");
    struct Row {
        const char* name;
        ProcessExit wait_status;
        State state;
        StopReason reason;
        const char* last_event;
    };
    SUBCASE("stop_when") {
        s.stop_when.edit().exit_codes = {0, 4};
        const Row rows[] = {
            {"clean run matching stop_when", exited(0), State::done, StopReason::predicate,
             "stopped web r1"},
            {"crash matching stop_when", exited(4), State::failed, StopReason::predicate,
             "stopped web r1"},
        };
        for (const Row& row : rows) {
            CAPTURE(row.name);
            Driver d(s);
            d.start(at(0));
            d.out.clear();
            d.exit(at(1), row.wait_status);
            CHECK(d.svc.state() == row.state);
            CHECK(d.svc.stopped_reason() == row.reason);
            CHECK(describe(events(d.out).back()) == row.last_event);
            CHECK_FALSE(d.svc.desired_up());
            CHECK(d.svc.next_deadline() == std::nullopt);
        }
    }
    SUBCASE("gave_up") {
        s.give_up_when.edit().exit_codes = {78};
        Driver d(s);
        d.start(at(0));
        d.out.clear();
        d.exit(at(1), exited(78));
        CHECK(d.svc.state() == State::failed);
        CHECK(d.svc.stopped_reason() == StopReason::gave_up);
        CHECK(describe(events(d.out).back()) == "gave_up web r1");
        CHECK(events(d.out).back().reason == "gave up: exit 78 matched give_up_when.exit_codes");
    }
    SUBCASE("restarts_exhausted") {
        s.restart.max_restarts = 1;
        Driver d(s);
        d.start(at(0));
        d.exit(at(1), exited(1));
        d.after_backoff(at(2));
        d.out.clear();
        d.exit(at(3), exited(1));
        CHECK(d.svc.state() == State::failed);
        CHECK(d.svc.stopped_reason() == StopReason::restarts_exhausted);
        CHECK(d.svc.run() == 2);
        CHECK(d.svc.restarts() == 1);
        CHECK(describe(events(d.out).back()) == "restarts_exhausted web r2");
    }
    SUBCASE("never after a crash") {
        s.restart.policy = config::RestartPolicy::never;
        Driver d(s);
        d.start(at(0));
        d.exit(at(1), exited(1));
        CHECK(d.svc.state() == State::failed);
        CHECK(d.svc.stopped_reason() == StopReason::policy_satisfied);
    }
    SUBCASE("always after a clean run goes on") {
        s.restart.policy = config::RestartPolicy::always;
        Driver d(s);
        d.start(at(0));
        d.out.clear();
        d.exit(at(1), exited(0));
        CHECK(d.svc.state() == State::backoff);
        CHECK(d.svc.restarts() == 1);
    }
}

TEST_CASE("group stop mode cleans up the exited run's process group, process mode does not") {
    config::ServiceSpec s = spec("web");
    s.stop.signal = SIGINT;
    s.stop.timeout = 2s;
    SUBCASE("group") {
        Driver d(s);
        d.start(at(0));
        d.out.clear();
        d.exit(at(1), exited(1));
        auto cleanups = only<CleanupGroupAction>(d.out);
        REQUIRE(cleanups.size() == 1);
        CHECK(describe(Action{cleanups[0]}) == "cleanup 0 pgid 100 INT grace 2000ms");
    }
    SUBCASE("process") {
        s.stop.mode = config::StopMode::process;
        Driver d(s);
        d.start(at(0));
        d.out.clear();
        d.exit(at(1), exited(1));
        CHECK(only<CleanupGroupAction>(d.out).empty());
        CHECK(d.take() == "exited web r1 code 1 | restarting web r1 in 200ms #1");
    }
}

}  // namespace
}  // namespace pkit::core
