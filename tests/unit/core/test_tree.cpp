// Group strategies (SPEC §6): which siblings restart with a crashed member, stopped
// one at a time in reverse start order and started again in start order once the
// last of them has stopped. Failure, intensity and escalation: test_tree_failure.cpp.

#include <doctest/doctest.h>

#include "daemon/core/supervisor.hpp"
#include "tests/unit/core/fake.hpp"

namespace pkit::core {
namespace {

using namespace test;

// Group g of a (0), b (1), c (2) in that member order, all running at t=0 with pids
// 100, 101, 102. Nothing else is defined.
Supervisor group_running(config::Strategy strategy) {
    config::DaemonSpec daemon;
    daemon.groups.push_back(
        config::GroupSpec{.name = "g", .strategy = strategy, .members = {"a", "b", "c"}});
    Supervisor sup = supervisor({spec("a"), spec("b"), spec("c")}, daemon);
    sup.start(at(0));
    sup.on_spawned(0, 1, 100, at(0));
    sup.on_spawned(1, 1, 101, at(0));
    sup.on_spawned(2, 1, 102, at(0));
    sup.take_actions();
    return sup;
}

TEST_CASE("one_for_one restarts only the crashed member and leaves its siblings alone") {
    Supervisor sup = group_running(config::Strategy::one_for_one);
    sup.on_exit(101, exited(1), at(1));
    CHECK(take(sup) ==
          "exited b [g] r1 code 1 | cleanup 1 pgid 101 TERM grace 5000ms | "
          "restarting b [g] r1 in 200ms #1");
    sup.on_time(at(1.2));
    CHECK(take(sup) == "spawn 1 r2");
    sup.on_spawned(1, 2, 201, at(1.2));
    CHECK(take(sup) == "started b [g] r2 pid 201");
    CHECK(sup.service(0).pid() == 100);
    CHECK(sup.service(2).pid() == 102);
    CHECK(sup.service(0).restarts() == 0);
    CHECK(sup.service(1).restarts() == 1);
    CHECK(sup.service(2).restarts() == 0);
}

TEST_CASE("one_for_all stops every sibling in reverse start order one at a time") {
    Supervisor sup = group_running(config::Strategy::one_for_all);
    sup.on_exit(101, exited(1), at(1));
    // Only the last member gets its stop signal; a waits for c to be gone.
    CHECK(take(sup) ==
          "exited b [g] r1 code 1 | cleanup 1 pgid 101 TERM grace 5000ms | "
          "restarting b [g] r1 in 200ms #1 | signal 2 r1 pid 102 TERM group +cont");
    sup.on_exit(102, killed(SIGTERM), at(1.05));
    CHECK(take(sup) ==
          "exited c [g] r1 signal TERM by operator | cleanup 2 pgid 102 TERM grace 5000ms | "
          "signal 0 r1 pid 100 TERM group +cont");
    CHECK(sup.service(2).state() == State::waiting);

    // The queue has drained: a starts at once, b after its backoff, c after b.
    sup.on_exit(100, killed(SIGTERM), at(1.1));
    CHECK(take(sup) ==
          "exited a [g] r1 signal TERM by operator | cleanup 0 pgid 100 TERM grace 5000ms | "
          "spawn 0 r2");
    sup.on_spawned(0, 2, 200, at(1.1));
    CHECK(take(sup) == "started a [g] r2 pid 200");
    sup.on_time(at(1.2));
    CHECK(take(sup) == "spawn 1 r2");
    sup.on_spawned(1, 2, 201, at(1.2));
    CHECK(take(sup) == "started b [g] r2 pid 201 | spawn 2 r2");
    sup.on_spawned(2, 2, 202, at(1.2));
    CHECK(take(sup) == "started c [g] r2 pid 202");
    // Each member restarted once: its own crash or the strategy.
    for (std::size_t i = 0; i < 3; ++i) {
        CHECK(sup.service(i).restarts() == 1);
        CHECK(sup.service(i).run() == 2);
        CHECK(sup.service(i).state() == State::running);
    }
}

TEST_CASE("one_for_all relaunches nothing while a sibling is still stopping") {
    Supervisor sup = group_running(config::Strategy::one_for_all);
    sup.on_exit(100, exited(1), at(1));  // a crashes: c, then b
    CHECK(take(sup) ==
          "exited a [g] r1 code 1 | cleanup 0 pgid 100 TERM grace 5000ms | "
          "restarting a [g] r1 in 200ms #1 | signal 2 r1 pid 102 TERM group +cont");
    // a's backoff ends while c and b are still being stopped: a waits for the queue.
    sup.on_time(at(1.2));
    CHECK(take(sup) == "");
    CHECK(sup.service(0).state() == State::waiting);
    sup.on_exit(102, killed(SIGTERM), at(1.3));
    CHECK(take(sup) ==
          "exited c [g] r1 signal TERM by operator | cleanup 2 pgid 102 TERM grace 5000ms | "
          "signal 1 r1 pid 101 TERM group +cont");
    sup.on_exit(101, killed(SIGTERM), at(1.4));
    CHECK(take(sup) ==
          "exited b [g] r1 signal TERM by operator | cleanup 1 pgid 101 TERM grace 5000ms | "
          "spawn 0 r2");
}

TEST_CASE("one_for_all escalates a sibling that ignores its stop signal to SIGKILL") {
    Supervisor sup = group_running(config::Strategy::one_for_all);
    sup.on_exit(100, exited(1), at(1));
    sup.take_actions();
    CHECK(seconds(sup.next_deadline()) == 1.2);
    sup.on_time(at(1.2));
    CHECK(seconds(sup.next_deadline()) == 6.0);  // c's stop.timeout
    sup.on_time(at(6));
    CHECK(take(sup) == "signal 2 r1 pid 102 KILL group");
    sup.on_exit(102, killed(SIGKILL), at(6.1));
    CHECK(take(sup) ==
          "exited c [g] r1 signal KILL by operator | cleanup 2 pgid 102 TERM grace 5000ms | "
          "signal 1 r1 pid 101 TERM group +cont");
}

TEST_CASE("rest_for_one restarts the crashed member and only those after it") {
    SUBCASE("the first member crashes: all restart") {
        Supervisor sup = group_running(config::Strategy::rest_for_one);
        sup.on_exit(100, exited(1), at(1));
        CHECK(take(sup) ==
              "exited a [g] r1 code 1 | cleanup 0 pgid 100 TERM grace 5000ms | "
              "restarting a [g] r1 in 200ms #1 | signal 2 r1 pid 102 TERM group +cont");
        sup.on_exit(102, killed(SIGTERM), at(1.1));
        CHECK(take(sup).ends_with("signal 1 r1 pid 101 TERM group +cont"));
    }
    SUBCASE("the middle member crashes: the one before it keeps running") {
        Supervisor sup = group_running(config::Strategy::rest_for_one);
        sup.on_exit(101, exited(1), at(1));
        CHECK(take(sup) ==
              "exited b [g] r1 code 1 | cleanup 1 pgid 101 TERM grace 5000ms | "
              "restarting b [g] r1 in 200ms #1 | signal 2 r1 pid 102 TERM group +cont");
        sup.on_exit(102, killed(SIGTERM), at(1.1));
        CHECK(take(sup) ==
              "exited c [g] r1 signal TERM by operator | cleanup 2 pgid 102 TERM grace 5000ms");
        sup.on_time(at(1.2));
        CHECK(take(sup) == "spawn 1 r2");
        sup.on_spawned(1, 2, 201, at(1.2));
        CHECK(take(sup) == "started b [g] r2 pid 201 | spawn 2 r2");
        CHECK(sup.service(0).pid() == 100);
        CHECK(sup.service(0).restarts() == 0);
        CHECK(sup.service(2).restarts() == 1);
    }
    SUBCASE("the last member crashes: only it restarts") {
        Supervisor sup = group_running(config::Strategy::rest_for_one);
        sup.on_exit(102, exited(1), at(1));
        CHECK(take(sup) ==
              "exited c [g] r1 code 1 | cleanup 2 pgid 102 TERM grace 5000ms | "
              "restarting c [g] r1 in 200ms #1");
        sup.on_time(at(1.2));
        CHECK(take(sup) == "spawn 2 r2");
        CHECK(sup.service(0).restarts() == 0);
        CHECK(sup.service(1).restarts() == 0);
    }
}

TEST_CASE("an operator restart of a group member applies no strategy") {
    Supervisor sup = group_running(config::Strategy::one_for_all);
    sup.restart_service(1, at(1));
    CHECK(take(sup) == "signal 1 r1 pid 101 TERM group +cont");
    sup.on_exit(101, killed(SIGTERM), at(1.1));
    CHECK(take(sup) ==
          "exited b [g] r1 signal TERM by operator | cleanup 1 pgid 101 TERM grace 5000ms | "
          "spawn 1 r2");
    CHECK(sup.service(0).pid() == 100);
    CHECK(sup.service(2).pid() == 102);
    CHECK(sup.service(1).restarts() == 0);
}

}  // namespace
}  // namespace pkit::core
