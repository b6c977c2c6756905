// Runs of one Service: the run timeout, launch failures, the generation rule (a notice
// for another run is ignored), the storm pause, and the output tails of two runs.

#include <doctest/doctest.h>

#include "daemon/core/explain.hpp"
#include "daemon/core/service.hpp"
#include "tests/unit/core/fake.hpp"

namespace pkit::core {
namespace {

using namespace test;
using config::LaunchError;

TEST_CASE("a run past its timeout gets the stop signal, then SIGKILL, and counts as a crash") {
    config::ServiceSpec s = spec("web");
    s.timeout = 10s;
    Driver d(s);
    d.start(at(0));
    d.take();
    CHECK(seconds(d.svc.next_deadline()) == 10.0);
    d.svc.on_time(at(9.9), d.out);
    CHECK(d.take() == "");
    d.svc.on_time(at(10), d.out);
    CHECK(d.take() == "signal 0 r1 pid 100 TERM group +cont");
    CHECK(d.svc.state() == State::stopping);
    CHECK(seconds(d.svc.next_deadline()) == 15.0);

    SUBCASE("it ignores the stop signal") {
        d.svc.on_time(at(15), d.out);
        CHECK(d.take() == "signal 0 r1 pid 100 KILL group");
        CHECK(d.svc.next_deadline() == std::nullopt);
        d.exit(at(15.1), killed(SIGKILL));
        CHECK(d.take() ==
              "exited web r1 signal KILL timed_out by timeout | "
              "cleanup 0 pgid 100 TERM grace 5000ms | restarting web r1 in 200ms #1");
        CHECK(d.svc.last_exit()->timed_out);
        CHECK(d.svc.last_exit()->killed_by == KilledBy::timeout);
        CHECK(d.svc.restarts() == 1);
    }
    SUBCASE("it exits 0 on the stop signal: still a crash, no SIGKILL") {
        d.exit(at(11), exited(0));
        CHECK(d.take() ==
              "exited web r1 code 0 timed_out by timeout | "
              "cleanup 0 pgid 100 TERM grace 5000ms | restarting web r1 in 200ms #1");
        d.svc.on_time(at(15), d.out);  // no SIGKILL: only the restart is due
        CHECK(d.take() == "");
        CHECK(d.svc.state() == State::waiting);
    }
}

TEST_CASE("the run timeout uses the stop signal and mode") {
    config::ServiceSpec s = spec("web");
    s.timeout = 1s;
    s.stop.signal = SIGINT;
    s.stop.timeout = 500ms;
    s.stop.mode = config::StopMode::process;
    Driver d(s);
    d.start(at(0));
    d.take();
    d.svc.on_time(at(1), d.out);
    CHECK(d.take() == "signal 0 r1 pid 100 INT process +cont");
    d.svc.on_time(at(1.5), d.out);
    CHECK(d.take() == "signal 0 r1 pid 100 KILL process");
}

TEST_CASE("a launch failure is a run without a process that goes through the gates") {
    Driver d(spec("web"));
    d.start(at(0));
    d.exit(at(1), exited(1));
    d.svc.on_time(at(1.2), d.out);
    d.take();
    d.svc.launch(at(1.2), d.out);
    CHECK(d.take() == "spawn 0 r2");
    d.fail_launch(at(1.2), LaunchError::not_found, "not_found: /bin/nope: No such file");
    CHECK(d.take() == "exited web r2 launch_error not_found | restarting web r2 in 400ms #2");
    CHECK(d.svc.run() == 2);
    CHECK(d.svc.state() == State::backoff);
    CHECK(d.svc.last_launch_error() == "not_found: /bin/nope: No such file");
    REQUIRE(d.svc.last_exit());
    CHECK(d.svc.last_exit()->code == 1);  // unchanged: still run 1's exit
    CHECK(d.svc.last_exit()->at == 1001.0);

    d.svc.on_time(at(1.6), d.out);
    d.svc.launch(at(1.6), d.out);
    d.fail_launch(at(1.6), LaunchError::not_found, "not_found: again");
    CHECK(d.take() ==
          "spawn 0 r3 | exited web r3 launch_error not_found | "
          "restarting web r3 in 800ms #3");
    CHECK(d.svc.last_launch_error() == "not_found: again");

    d.after_backoff(at(2.4));
    CHECK(d.take() == "spawn 0 r4 | started web r4 pid 101");
    CHECK(d.svc.last_launch_error() == std::nullopt);
}

TEST_CASE("a launch failure matching give_up_when.launch_errors ends supervision") {
    config::ServiceSpec s = spec("web");
    s.give_up_when.edit().launch_errors = {LaunchError::permission_denied};
    Driver d(s);
    d.svc.want_up(at(0), d.out, true);
    d.svc.launch(at(0), d.out);
    d.fail_launch(at(0), LaunchError::permission_denied, "permission_denied: /x");
    CHECK(d.take() == "spawn 0 r1 | exited web r1 launch_error permission_denied | gave_up web r1");
    CHECK(d.svc.state() == State::failed);
    CHECK(d.svc.stopped_reason() == StopReason::gave_up);
    CHECK(d.svc.last_exit() == std::nullopt);
}

TEST_CASE("notices for a run other than the current one are ignored") {
    Driver d(spec("web"));
    d.start(at(0));
    d.svc.stop(at(1), d.out, AfterStop::relaunch, std::nullopt);
    d.exit(at(1.1), killed(SIGTERM));
    REQUIRE(d.svc.state() == State::waiting);
    d.svc.launch(at(1.1), d.out);
    d.take();

    d.svc.on_spawned(1, 555, at(1.1), d.out);  // run 1 is over
    CHECK(d.svc.state() == State::starting);
    CHECK(d.svc.pid() == 0);
    Outcome stale =
        d.svc.on_launch_failed(1, LaunchFailure{LaunchError::other, "x"}, at(1.1), d.out, 0.5);
    CHECK_FALSE(stale.crashed);
    CHECK(d.svc.state() == State::starting);
    d.svc.on_spawned(2, 101, at(1.1), d.out);
    CHECK(d.take() == "started web r2 pid 101");

    stale = d.svc.on_exit(1, exited(1), at(2), d.out, 0.5);
    CHECK_FALSE(stale.crashed);
    CHECK(d.take() == "");
    CHECK(d.svc.state() == State::running);
    CHECK(d.svc.pid() == 101);
    CHECK(d.svc.restarts() == 0);

    SUBCASE("a second exit notice for the current run is ignored too") {
        d.exit(at(3), exited(1));
        d.take();
        d.exit(at(3), exited(1));
        CHECK(d.take() == "");
        CHECK(d.svc.restarts() == 1);
    }
}

TEST_CASE("a storm trip pauses the service: storm_pause event, state, counter") {
    config::ServiceSpec s = spec("web");
    s.storm.edit().pause = 30s;
    s.restart.backoff_initial = 0s;  // crashes come 0.2 s apart
    Driver d(s);
    d.start(at(0));
    for (int i = 1; i <= 5; ++i) {
        d.exit(at(0.2 * i - 0.1), exited(1));
        CHECK(d.svc.state() == State::waiting);  // a zero delay restarts at once
        d.relaunch(at(0.2 * i));
    }
    CHECK(d.svc.storm_pauses() == 0);
    d.take();
    d.exit(at(1.1), exited(1));
    CHECK(d.take() ==
          "exited web r6 code 1 | cleanup 0 pgid 105 TERM grace 5000ms | "
          "storm_pause web r6 for 30000ms | restarting web r6 in 30000ms #6");
    CHECK(d.svc.state() == State::storm_pause);
    CHECK(d.svc.storm_pauses() == 1);
    CHECK(seconds(d.svc.next_deadline()) == doctest::Approx(31.1));
    d.svc.on_time(at(31.1), d.out);
    CHECK(d.svc.state() == State::waiting);
}

TEST_CASE("each run has its own tail; the previous run's tail is kept") {
    config::ServiceSpec s = spec("web");
    s.output.max_lines = 2;
    Driver d(s);
    d.start(at(0));
    d.svc.record_output(1, Stream::stdout_, "one", 1000.1);
    d.exit(at(1), exited(1));
    d.svc.record_output(1, Stream::stderr_, "late", 1001.0);  // leftovers of the group
    REQUIRE(d.svc.tail().size() == 2);
    CHECK(d.svc.tail().at(1).text == "late");
    CHECK(d.svc.tail_run() == 1);
    CHECK(d.svc.previous_tail_run() == std::nullopt);

    d.after_backoff(at(1.2));
    CHECK(d.svc.tail().empty());
    CHECK(d.svc.tail_run() == 2);
    CHECK(d.svc.previous_tail_run() == 1);
    CHECK(d.svc.previous_tail().size() == 2);
    d.svc.record_output(1, Stream::stdout_, "later", 1001.3);  // run 1's pipes drain late
    d.svc.record_output(2, Stream::stdout_, "two", 1001.3);
    d.svc.record_output(2, Stream::stdout_, "2b", 1001.3);
    d.svc.record_output(2, Stream::stdout_, "2c", 1001.3);
    CHECK(d.svc.previous_tail().at(1).text == "later");
    CHECK(d.svc.tail().at(0).text == "2b");
    CHECK(d.svc.tail().truncated());

    d.exit(at(2), exited(1));
    d.after_backoff(at(2.4));
    d.svc.record_output(1, Stream::stdout_, "ancient", 1002.5);  // neither tail: dropped
    CHECK(d.svc.tail_run() == 3);
    CHECK(d.svc.previous_tail_run() == 2);
    CHECK(d.svc.tail().empty());
    CHECK(d.svc.previous_tail().size() == 2);
    CHECK(d.svc.previous_tail().at(1).text == "2c");
}

TEST_CASE("give_up_when.output_matches searches only the ended run's tail") {
    config::ServiceSpec s = spec("web");
    s.restart.policy = config::RestartPolicy::always;
    s.give_up_when.edit().output_matches = pattern("FATAL");
    Driver d(s);
    d.start(at(0));
    d.svc.record_output(1, Stream::stderr_, "FATAL: but exits 0", 1000.5);
    d.exit(at(1), exited(0));
    CHECK(d.svc.state() == State::backoff);  // clean: give_up_when not consulted
    d.after_backoff(at(1.2));
    d.exit(at(2), exited(1));
    CHECK(d.svc.state() == State::backoff);  // run 1's line is not in run 2's tail
    d.after_backoff(at(2.4));
    d.svc.record_output(3, Stream::stdout_, "FATAL: now", 1002.5);
    d.exit(at(3), exited(1));
    CHECK(d.svc.state() == State::failed);
    CHECK(d.svc.stopped_reason() == StopReason::gave_up);
}

TEST_CASE("a run the OOM killer killed in says so in its exit, counts, and meets oom = true") {
    config::ServiceSpec s = spec("web");
    s.give_up_when.edit().oom = true;
    Driver d(s);
    d.start(at(0));
    d.take();
    // An exit without an OOM kill: restarted as any crash.
    d.exit(at(1), killed(SIGKILL));
    CHECK(d.take() ==
          "exited web r1 signal KILL | cleanup 0 pgid 100 TERM grace 5000ms | "
          "restarting web r1 in 200ms #1");
    CHECK_FALSE(d.svc.last_exit()->oom_killed);
    CHECK(d.svc.oom_kills() == 0);
    d.after_backoff(at(1.2));
    d.take();
    ProcessExit oom = killed(SIGKILL);
    oom.oom_killed = true;
    d.exit(at(2), oom);
    CHECK(d.take() ==
          "exited web r2 signal KILL oom | cleanup 0 pgid 101 TERM grace 5000ms | gave_up web r2");
    CHECK(d.svc.last_decision().why == "gave up: an OOM kill matched give_up_when.oom");
    CHECK(d.svc.last_exit()->oom_killed);
    CHECK(d.svc.oom_kills() == 1);
    CHECK(d.svc.state() == State::failed);
    CHECK(d.svc.stopped_reason() == StopReason::gave_up);
    // A fresh start resets it with the other counters.
    d.svc.want_up(at(3), d.out, true);
    CHECK(d.svc.oom_kills() == 0);
}

TEST_CASE("explain names an OOM kill and the memory_max in the decision") {
    config::ServiceSpec web = spec("web");
    web.resources.edit().memory_max = 256ULL << 20;
    Supervisor sup = supervisor({web});
    sup.start(at(0));
    sup.on_spawned(0, 1, 100, at(0));
    ProcessExit oom = killed(SIGKILL);
    oom.oom_killed = true;
    sup.on_exit(100, oom, at(1));
    sup.take_actions();
    CHECK(explain(sup, 0, at(1)).text ==
          "restart 1 in 0.2 s: backoff step 0. The last run: killed by the OOM killer "
          "(memory_max 256MiB).");
}

}  // namespace
}  // namespace pkit::core
