// Operator commands through the Supervisor (SPEC §3, §5, §7): stop, start, restart.
// A run pkitd stops on request is never a crash and never counts against a limit.

#include <doctest/doctest.h>

#include "daemon/core/supervisor.hpp"
#include "tests/unit/core/fake.hpp"

namespace pkit::core {
namespace {

using namespace test;

// One running service "web" (index 0), run 1 with pid 100, actions taken.
Supervisor running(config::ServiceSpec s) {
    Supervisor sup = supervisor({std::move(s)});
    sup.start(at(0));
    sup.on_spawned(0, 1, 100, at(0));
    sup.take_actions();
    return sup;
}

TEST_CASE("operator stop: stop signal with SIGCONT, SIGKILL after stop.timeout, not a crash") {
    Supervisor sup = running(spec("web"));
    sup.stop_service(0, at(1));
    CHECK(take(sup) == "signal 0 r1 pid 100 TERM group +cont");
    CHECK(sup.service(0).state() == State::stopping);
    CHECK(seconds(sup.next_deadline()) == 6.0);
    sup.on_time(at(6));
    CHECK(take(sup) == "signal 0 r1 pid 100 KILL group");
    CHECK(sup.on_exit(100, killed(SIGKILL), at(6.1)));
    CHECK(take(sup) ==
          "exited web r1 signal KILL by operator | cleanup 0 pgid 100 TERM grace 5000ms | "
          "stopped web r1");
    const Service& web = sup.service(0);
    CHECK(web.state() == State::stopped);
    CHECK(web.stopped_reason() == StopReason::operator_);
    CHECK(web.restarts() == 0);
    CHECK(web.last_exit()->killed_by == KilledBy::operator_);
    CHECK_FALSE(web.last_exit()->timed_out);
    CHECK(sup.next_deadline() == std::nullopt);
    sup.on_time(at(100));
    CHECK(take(sup) == "");
}

TEST_CASE("operator stop: a run that exits 1 on the stop signal is still not a crash") {
    config::ServiceSpec s = spec("web");
    s.restart.max_restarts = 0;
    Supervisor sup = running(s);
    sup.stop_service(0, at(1));
    sup.on_exit(100, exited(1), at(1.5));
    CHECK(take(sup) ==
          "signal 0 r1 pid 100 TERM group +cont | exited web r1 code 1 by operator | "
          "cleanup 0 pgid 100 TERM grace 5000ms | stopped web r1");
    CHECK(sup.service(0).stopped_reason() == StopReason::operator_);
}

TEST_CASE("operator stop during backoff cancels the restart") {
    Supervisor sup = running(spec("web"));
    sup.on_exit(100, exited(1), at(1));
    REQUIRE(sup.service(0).state() == State::backoff);
    sup.take_actions();
    sup.stop_service(0, at(1.1));
    CHECK(take(sup) == "stopped web r1");
    CHECK(sup.service(0).state() == State::stopped);
    CHECK(sup.next_deadline() == std::nullopt);
    sup.on_time(at(1.2));
    sup.on_time(at(60));
    CHECK(take(sup) == "");
}

TEST_CASE("operator stop turns a timeout kill under way into a stop that is no crash") {
    config::ServiceSpec s = spec("web");
    s.timeout = 2s;
    Supervisor sup = running(s);
    sup.on_time(at(2));
    CHECK(take(sup) == "signal 0 r1 pid 100 TERM group +cont");
    sup.stop_service(0, at(3));
    CHECK(take(sup) == "");  // the stop signal went already
    sup.on_exit(100, killed(SIGTERM), at(3.5));
    CHECK(sup.service(0).state() == State::stopped);
    CHECK(sup.service(0).restarts() == 0);
}

TEST_CASE("operator start re-arms a stopped, done or failed service with fresh counters") {
    SUBCASE("failed") {
        config::ServiceSpec s = spec("web");
        s.restart.max_restarts = 1;
        Supervisor sup = running(s);
        sup.on_exit(100, exited(1), at(1));
        sup.on_time(at(1.2));
        sup.on_spawned(0, 2, 101, at(1.2));
        sup.on_exit(101, exited(1), at(2));
        REQUIRE(sup.service(0).state() == State::failed);
        REQUIRE(sup.service(0).restarts() == 1);
        sup.take_actions();
        sup.start_service(0, at(10));
        CHECK(take(sup) == "spawn 0 r3");
        CHECK(sup.service(0).restarts() == 0);
        CHECK(sup.service(0).stopped_reason() == std::nullopt);
        sup.on_spawned(0, 3, 102, at(10));
        sup.on_exit(102, exited(1), at(11));
        // Fresh: the window is empty again and the backoff starts from its first step.
        CHECK(sup.service(0).state() == State::backoff);
        CHECK(events_of(sup.take_actions(), EventType::restarting).at(0).delay == 200ms);
    }
    SUBCASE("done") {
        Supervisor sup = running(spec("job"));
        sup.on_exit(100, exited(0), at(1));
        REQUIRE(sup.service(0).state() == State::done);
        sup.take_actions();
        sup.start_service(0, at(2));
        CHECK(take(sup) == "spawn 0 r2");
    }
    SUBCASE("stopped by the operator") {
        Supervisor sup = running(spec("web"));
        sup.stop_service(0, at(1));
        sup.on_exit(100, killed(SIGTERM), at(1));
        sup.take_actions();
        sup.start_service(0, at(2));
        CHECK(take(sup) == "spawn 0 r2");
        CHECK(sup.service(0).state() == State::starting);
    }
    SUBCASE("autostart = false stays stopped until started") {
        config::ServiceSpec s = spec("web");
        s.autostart = false;
        Supervisor sup = supervisor({s});
        sup.start(at(0));
        CHECK(take(sup) == "");
        CHECK(sup.service(0).state() == State::stopped);
        CHECK(sup.service(0).stopped_reason() == StopReason::operator_);
        sup.start_service(0, at(1));
        CHECK(take(sup) == "spawn 0 r1");
    }
}

TEST_CASE("operator restart stops the run (not a crash) and relaunches at once") {
    Supervisor sup = running(spec("web"));
    sup.restart_service(0, at(5));
    CHECK(take(sup) == "signal 0 r1 pid 100 TERM group +cont");
    sup.on_exit(100, killed(SIGTERM), at(5.1));
    CHECK(take(sup) ==
          "exited web r1 signal TERM by operator | cleanup 0 pgid 100 TERM grace 5000ms | "
          "spawn 0 r2");
    sup.on_spawned(0, 2, 101, at(5.1));
    CHECK(take(sup) == "started web r2 pid 101");
    CHECK(sup.service(0).restarts() == 0);

    SUBCASE("during backoff it skips the wait") {
        sup.on_exit(101, exited(1), at(6));
        sup.take_actions();
        REQUIRE(sup.service(0).state() == State::backoff);
        sup.restart_service(0, at(6.05));
        CHECK(take(sup) == "spawn 0 r3");
        CHECK(sup.service(0).restarts() == 1);  // the crash's, not the operator's
    }
}

TEST_CASE("operator restarts never count against max_restarts, the backoff or the storm") {
    config::ServiceSpec s = spec("web");
    s.restart.max_restarts = 1;
    s.storm.edit().pause = 30s;
    s.storm.edit().threshold = 2.0;
    Supervisor sup = running(s);
    pid_t pid = 100;
    for (int i = 0; i < 10; ++i) {
        sup.restart_service(0, at(1 + i));
        sup.on_exit(pid, killed(SIGTERM), at(1 + i));
        ++pid;
        sup.on_spawned(0, sup.service(0).run(), pid, at(1 + i));
    }
    sup.take_actions();
    CHECK(sup.service(0).run() == 11);
    CHECK(sup.service(0).restarts() == 0);
    CHECK(sup.service(0).policy_state().backoff_step == 0);

    sup.on_exit(pid, exited(1), at(20));
    CHECK(take(sup) ==
          "exited web r11 code 1 | cleanup 0 pgid 110 TERM grace 5000ms | "
          "restarting web r11 in 200ms #1");
    CHECK(sup.service(0).state() == State::backoff);
    CHECK(sup.service(0).storm_pauses() == 0);
}

}  // namespace
}  // namespace pkit::core

namespace pkit::core {
namespace {

using namespace test;

// A stop or restart that comes between the fork and the report of the spawn (pid 0)
// is remembered and acted on when the launch is reported, or when it fails.
TEST_CASE("operator stop or restart while a launch is under way is acted on once it is reported") {
    SUBCASE("stop, then spawned: the run gets its stop signal") {
        Supervisor sup = supervisor({spec("web")});
        sup.start(at(0));
        CHECK(take(sup) == "spawn 0 r1");
        sup.stop_service(0, at(0.1));
        CHECK(take(sup) == "");
        sup.on_spawned(0, 1, 100, at(0.2));
        CHECK(take(sup) == "started web r1 pid 100 | signal 0 r1 pid 100 TERM group +cont");
        CHECK(sup.service(0).state() == State::stopping);
        sup.on_exit(100, killed(SIGTERM), at(0.3));
        CHECK(take(sup) ==
              "exited web r1 signal TERM by operator | cleanup 0 pgid 100 TERM grace 5000ms | "
              "stopped web r1");
        CHECK(sup.service(0).state() == State::stopped);
        CHECK(sup.service(0).restarts() == 0);
    }
    SUBCASE("restart, then spawned: the run is stopped and a new one launched") {
        Supervisor sup = supervisor({spec("web")});
        sup.start(at(0));
        take(sup);
        sup.restart_service(0, at(0.1));
        sup.on_spawned(0, 1, 100, at(0.2));
        CHECK(take(sup) == "started web r1 pid 100 | signal 0 r1 pid 100 TERM group +cont");
        sup.on_exit(100, killed(SIGTERM), at(0.3));
        CHECK(take(sup) ==
              "exited web r1 signal TERM by operator | cleanup 0 pgid 100 TERM grace 5000ms | "
              "spawn 0 r2");
        CHECK(sup.service(0).restarts() == 0);
    }
    SUBCASE("stop, then the launch fails: stopped, no crash, no restart") {
        Supervisor sup = supervisor({spec("web")});
        sup.start(at(0));
        take(sup);
        sup.stop_service(0, at(0.1));
        sup.on_launch_failed(0, 1, LaunchFailure{config::LaunchError::not_found, "not_found: x"},
                             at(0.2));
        CHECK(take(sup) == "exited web r1 launch_error not_found | stopped web r1");
        CHECK(sup.service(0).state() == State::stopped);
        CHECK(sup.service(0).stopped_reason() == StopReason::operator_);
        CHECK(sup.service(0).crashes_counted() == 0);
        CHECK(sup.next_deadline() == std::nullopt);
    }
}

}  // namespace
}  // namespace pkit::core
