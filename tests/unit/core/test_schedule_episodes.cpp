// Scheduled jobs (SPEC §12) on the fake clock: armed at start, an episode a tick with
// fresh counters, retries under [restart], a missed tick, start and stop, the wall
// clock set back and forward, a reload of the schedule, and `wait --for done`.

#include <doctest/doctest.h>

#include "daemon/core/explain.hpp"
#include "daemon/core/readiness.hpp"
#include "daemon/core/wait.hpp"
#include "tests/unit/core/fake.hpp"

namespace pkit::core {
namespace {

using namespace test;

config::ServiceSpec scheduled(std::string name, const char* expression) {
    config::ServiceSpec s = spec(std::move(name));
    s.type = config::ServiceType::oneshot;
    s.schedule = config::parse_schedule(expression).value();
    s.affects_readiness = false;
    return s;
}

// A wall clock of our own: mono `m` seconds, wall `w` unix seconds.
Now when(double m, double w) {
    Now now = at(m);
    now.wall = w;
    return now;
}

}  // namespace

TEST_CASE("a scheduled job waits armed, and each tick runs an episode") {
    Supervisor sup = supervisor({scheduled("backup", "every 10s")});
    sup.start(at(0));
    CHECK(take(sup) == "");
    const Service& s = sup.service(0);
    CHECK(s.state() == State::scheduled);
    CHECK(seconds(sup.next_deadline()) == 10.0);
    CHECK(s.schedule().tick_wall == doctest::Approx(1010.0));

    sup.on_time(at(9.999));
    CHECK(take(sup) == "");
    sup.on_time(at(10));
    CHECK(take(sup) == "spawn 0 r1");
    CHECK(s.schedule().last_started == doctest::Approx(1010.0));
    CHECK(seconds(s.tick_due()) == 20.0);
    sup.on_spawned(0, 1, 100, at(10));
    CHECK(s.state() == State::running);
    CHECK(take(sup) == "started backup r1 pid 100");

    sup.on_exit(100, exited(0), at(11));
    CHECK(take(sup) ==
          "exited backup r1 code 0 | cleanup 0 pgid 100 TERM grace 5000ms | stopped backup r1");
    CHECK(s.state() == State::scheduled);
    CHECK(s.schedule().last_result == State::done);
    CHECK(s.schedule().last_success == doctest::Approx(1011.0));
    CHECK(s.satisfies_dependents());
    CHECK(seconds(sup.next_deadline()) == 20.0);

    sup.on_time(at(20));
    CHECK(take(sup) == "spawn 0 r2");
}

TEST_CASE("a rolling restart of a scheduled job runs an episode and ends with it") {
    Supervisor sup = supervisor({scheduled("backup", "every 10s")});
    sup.start(at(0));
    take(sup);
    std::size_t id = sup.restart_rolling({0}, at(1));
    CHECK(take(sup) == "spawn 0 r1");
    sup.on_spawned(0, 1, 100, at(1));
    take(sup);
    CHECK_FALSE(sup.roll(id).done);
    sup.on_exit(100, exited(0), at(2));
    take(sup);
    const Service& s = sup.service(0);
    CHECK(s.state() == State::scheduled);
    CHECK(s.schedule().last_result == State::done);
    // The episode has ended: the roll is through, not waiting for ever (which would
    // also hold off an upgrade, refused while a roll is under way).
    CHECK(sup.roll(id).done);
    CHECK_FALSE(sup.roll(id).failure.has_value());
    CHECK(seconds(sup.next_deadline()) == 10.0);
}

TEST_CASE("a tick during an episode is missed: counted and sent as an event") {
    Supervisor sup = supervisor({scheduled("report", "every 10s")});
    sup.start(at(0));
    sup.on_time(at(10));
    sup.on_spawned(0, 1, 100, at(10));
    take(sup);
    sup.on_time(at(20));
    CHECK(take(sup) == "missed report r1");
    const Service& s = sup.service(0);
    CHECK(s.schedule().missed == 1);
    CHECK(s.state() == State::running);
    CHECK(seconds(s.tick_due()) == 30.0);
    sup.on_exit(100, exited(0), at(25));
    take(sup);
    CHECK(s.state() == State::scheduled);
    sup.on_time(at(30));
    CHECK(take(sup) == "spawn 0 r2");
    CHECK(s.schedule().missed == 1);
}

TEST_CASE("an episode retries under [restart] and the next tick starts with fresh counters") {
    config::ServiceSpec job = scheduled("sync", "every 10s");
    job.restart.max_restarts = 2;
    job.restart.backoff_initial = 1s;
    Supervisor sup = supervisor({job});
    sup.start(at(0));
    sup.on_time(at(10));
    sup.on_spawned(0, 1, 100, at(10));
    sup.on_exit(100, exited(1), at(10.5));
    CHECK(sup.service(0).state() == State::backoff);
    sup.on_time(at(11.5));
    sup.on_spawned(0, 2, 101, at(11.5));
    sup.on_exit(101, exited(1), at(12));
    sup.on_time(at(14));
    sup.on_spawned(0, 3, 102, at(14));
    // The tick comes during the retries: missed, the episode goes on.
    sup.on_time(at(20));
    CHECK(sup.service(0).schedule().missed == 1);
    CHECK(sup.service(0).restarts() == 2);
    sup.on_exit(102, exited(1), at(21));
    const Service& s = sup.service(0);
    CHECK(s.state() == State::scheduled);
    CHECK(s.schedule().last_result == State::failed);
    CHECK(s.stopped_reason() == StopReason::restarts_exhausted);
    CHECK_FALSE(s.schedule().last_success);
    CHECK_FALSE(s.satisfies_dependents());
    take(sup);
    sup.on_time(at(30));
    CHECK(take(sup) == "spawn 0 r4");
    CHECK(s.restarts() == 0);
    CHECK(s.state() == State::starting);
    Explanation e = explain(sup, 0, at(30));
    CHECK(e.text == "run 4 is starting and not ready yet.");
}

TEST_CASE("start runs an episode now and arms; stop ends it and disarms") {
    config::ServiceSpec job = scheduled("clean", "every 10s");
    job.autostart = false;
    Supervisor sup = supervisor({job});
    sup.start(at(0));
    const Service& s = sup.service(0);
    CHECK(s.state() == State::stopped);
    CHECK_FALSE(s.schedule().armed);
    CHECK_FALSE(sup.next_deadline());

    sup.start_service(0, at(3));
    CHECK(take(sup) == "spawn 0 r1");
    CHECK(s.schedule().armed);
    CHECK(s.schedule().last_started == doctest::Approx(1003.0));
    CHECK(seconds(s.tick_due()) == 10.0);
    sup.on_spawned(0, 1, 100, at(3));
    take(sup);

    sup.stop_service(0, at(4));
    CHECK(take(sup) == "signal 0 r1 pid 100 TERM group +cont");
    CHECK_FALSE(s.schedule().armed);
    CHECK_FALSE(s.tick_due());
    sup.on_exit(100, killed(SIGTERM), at(4.1));
    CHECK(s.state() == State::stopped);
    sup.on_time(at(10));
    CHECK(take(sup).find("spawn") == std::string::npos);

    // Stopped between episodes: disarmed, `stopped`.
    sup.start_service(0, at(20));
    sup.on_spawned(0, 2, 101, at(20));
    sup.on_exit(101, exited(0), at(21));
    CHECK(s.state() == State::scheduled);
    sup.stop_service(0, at(22));
    CHECK(s.state() == State::stopped);
    CHECK(s.stopped_reason() == StopReason::operator_);
}

TEST_CASE("restart between episodes runs one now and keeps the job armed") {
    Supervisor sup = supervisor({scheduled("clean", "every 10s")});
    sup.start(at(0));
    sup.restart_service(0, at(4));
    CHECK(take(sup) == "spawn 0 r1");
    const Service& s = sup.service(0);
    CHECK(s.schedule().last_started == doctest::Approx(1004.0));
    CHECK(s.schedule().armed);
    CHECK(seconds(s.tick_due()) == 10.0);
    sup.on_spawned(0, 1, 100, at(4));
    sup.on_exit(100, exited(0), at(5));
    CHECK(s.state() == State::scheduled);
    CHECK(s.schedule().last_result == State::done);
}

TEST_CASE("a cron tick is due by the wall clock: set back it waits, set forward it runs once") {
    // Every minute; the wall clock starts at unix 1000, so the first tick is 1020.
    Supervisor sup = supervisor({scheduled("poll", "* * * * *")});
    sup.start(when(0, 1000));
    const Service& s = sup.service(0);
    CHECK(s.schedule().tick_wall == 1020.0);
    CHECK(seconds(s.tick_due()) == 20.0);

    // The clock was set back 20 s: at the monotonic deadline the wall shows 1000.
    sup.on_time(when(20, 1000));
    CHECK(take(sup) == "");
    CHECK(seconds(s.tick_due()) == 40.0);
    sup.on_time(when(40, 1020));
    CHECK(take(sup) == "spawn 0 r1");
    sup.on_spawned(0, 1, 100, when(40, 1020));
    sup.on_exit(100, exited(0), when(41, 1021));
    take(sup);
    CHECK(s.schedule().tick_wall == 1080.0);

    // Set back again after the tick: 1020 does not come twice.
    sup.on_time(when(100, 1030));
    CHECK(take(sup) == "");
    CHECK(s.schedule().tick_wall == 1080.0);

    // Set forward an hour: one episode, then the next minute after the new time.
    sup.on_time(when(150, 4630));
    CHECK(take(sup) == "spawn 0 r2");
    CHECK(s.schedule().tick_wall == 4680.0);
    CHECK(s.schedule().missed == 0);
}

TEST_CASE("a reload that changes only the schedule re-arms it and keeps the episode") {
    Supervisor sup = supervisor({scheduled("backup", "every 10s")});
    sup.start(at(0));
    sup.on_time(at(10));
    sup.on_spawned(0, 1, 100, at(10));
    take(sup);
    config::ServiceSpec changed = scheduled("backup", "every 1m");
    changed.stamp.number = 9;
    ReloadOutcome r = sup.reload(tree({changed}), at(12));
    CHECK(r.changed == std::vector<std::string>{"backup"});
    const Service& s = sup.service(0);
    CHECK(s.spec().stamp.number == 9);  // now equal to that parse
    CHECK(s.state() == State::running);
    CHECK(s.pid() == 100);
    CHECK(s.spec().schedule->expression == "every 1m");
    CHECK(seconds(s.tick_due()) == 60.0);
    CHECK(take(sup).find("signal") == std::string::npos);
}

TEST_CASE("wait --for done on a scheduled job waits for the next episode's end") {
    config::ServiceSpec job = scheduled("nightly", "every 10s");
    job.restart.policy = config::RestartPolicy::never;
    Supervisor sup = supervisor({job});
    sup.start(at(0));
    const Service& s = sup.service(0);
    const std::uint64_t before = s.schedule().episodes_ended;
    CHECK(check_wait(s, WaitFor::done, before).verdict == WaitVerdict::pending);
    CHECK(check_wait(s, WaitFor::ready, before).verdict == WaitVerdict::pending);
    sup.on_time(at(10));
    sup.on_spawned(0, 1, 100, at(10));
    CHECK(check_wait(s, WaitFor::done, before).verdict == WaitVerdict::pending);
    sup.on_exit(100, exited(0), at(11));
    CHECK(check_wait(s, WaitFor::done, before).verdict == WaitVerdict::reached);
    CHECK(check_wait(s, WaitFor::ready, before).verdict == WaitVerdict::reached);
    // A later wait waits for the episode after: this one fails.
    const std::uint64_t later = s.schedule().episodes_ended;
    CHECK(check_wait(s, WaitFor::done, later).verdict == WaitVerdict::pending);
    sup.on_time(at(20));
    sup.on_spawned(0, 2, 101, at(20));
    sup.on_exit(101, exited(3), at(21));
    WaitCheck failed = check_wait(s, WaitFor::done, later);
    CHECK(failed.verdict == WaitVerdict::unreachable);
    CHECK(failed.reason.find("nightly's latest episode failed") == 0);
}

TEST_CASE("explain says when the next episode starts and how the last one ended") {
    Supervisor sup = supervisor({scheduled("backup", "every 10s")});
    sup.start(at(0));
    CHECK(explain(sup, 0, at(2)).text ==
          "scheduled (every 10s): the next episode starts in 8s. No episode has ended yet.");
    sup.on_time(at(10));
    sup.on_spawned(0, 1, 100, at(10));
    sup.on_time(at(20));
    sup.on_exit(100, exited(0), at(21));
    CHECK(explain(sup, 0, at(25)).text ==
          "scheduled (every 10s): the next episode starts in 5s. The last episode ended done "
          "(policy_satisfied): exit 0 is clean and the policy is on_crash. 1 tick was missed "
          "while an episode ran.");
}

TEST_CASE("a scheduled job counts toward readiness only when its latest episode failed") {
    config::ServiceSpec job = scheduled("nightly", "every 10s");
    job.affects_readiness = true;
    job.restart.policy = config::RestartPolicy::never;
    Supervisor sup = supervisor({job});
    sup.start(at(0));
    CHECK(readiness(sup, at(1)).ready);
    sup.on_time(at(10));
    sup.on_spawned(0, 1, 100, at(10));
    CHECK(readiness(sup, at(11)).ready);
    sup.on_exit(100, exited(1), at(11));
    CHECK_FALSE(readiness(sup, at(12)).ready);
}

}  // namespace pkit::core
