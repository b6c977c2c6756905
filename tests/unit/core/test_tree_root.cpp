// The root of the tree (SPEC §6): a failed group is stopped in reverse order and
// restarted whole up to [root] max_restarts within [root] within; past that, and for
// a root-level escalate service, pkitd escalates and exits 1 once everything stopped.

#include <doctest/doctest.h>

#include "daemon/core/supervisor.hpp"
#include "tests/unit/core/fake.hpp"

namespace pkit::core {
namespace {

using namespace test;

// Group g (one_for_one, max_restarts 0: the first crash fails it) of a (0), b (1),
// c (2), all running at t=0 with pids 100, 101, 102; [root] as given.
Supervisor group_running(int root_max_restarts, Duration root_within = 60s) {
    config::DaemonSpec daemon;
    daemon.root = {.max_restarts = root_max_restarts, .within = root_within};
    daemon.groups.push_back(
        config::GroupSpec{.name = "g", .members = {"a", "b", "c"}, .max_restarts = 0});
    Supervisor sup = supervisor({spec("a"), spec("b"), spec("c")}, daemon);
    sup.start(at(0));
    sup.on_spawned(0, 1, 100, at(0));
    sup.on_spawned(1, 1, 101, at(0));
    sup.on_spawned(2, 1, 102, at(0));
    sup.take_actions();
    return sup;
}

// b crashes at `t` (failing g); the members stop and the root restarts them with pids
// base, base+1, base+2.
void fail_and_root_restart(Supervisor& sup, double t, pid_t base) {
    sup.on_exit(sup.service(1).pid(), exited(1), at(t));
    sup.on_exit(sup.service(2).pid(), killed(SIGTERM), at(t + 0.1));
    sup.on_exit(sup.service(0).pid(), killed(SIGTERM), at(t + 0.2));
    for (std::size_t i = 0; i < 3; ++i) {
        sup.on_spawned(i, sup.service(i).run(), base + static_cast<pid_t>(i), at(t + 0.2));
    }
    sup.take_actions();
}

TEST_CASE("the root restarts a failed group whole after stopping it in reverse order") {
    Supervisor sup = group_running(1);
    sup.on_exit(101, exited(1), at(1));
    CHECK(take(sup) ==
          "exited b [g] r1 code 1 | cleanup 1 pgid 101 TERM grace 5000ms | "
          "restarting b [g] r1 in 200ms #1 | group_failed  [g] r0 | "
          "signal 2 r1 pid 102 TERM group +cont");
    CHECK_FALSE(sup.shutting_down());
    sup.on_exit(102, killed(SIGTERM), at(1.1));
    CHECK(take(sup) ==
          "exited c [g] r1 signal TERM by operator | cleanup 2 pgid 102 TERM grace 5000ms | "
          "stopped c [g] r1 | stopped b [g] r1 | signal 0 r1 pid 100 TERM group +cont");
    // b's own backoff does not bring it back while the group is stopping.
    sup.on_time(at(1.2));
    CHECK(take(sup) == "");
    sup.on_exit(100, killed(SIGTERM), at(1.3));
    CHECK(take(sup) ==
          "exited a [g] r1 signal TERM by operator | cleanup 0 pgid 100 TERM grace 5000ms | "
          "stopped a [g] r1 | spawn 0 r2");
    sup.on_spawned(0, 2, 200, at(1.3));
    CHECK(take(sup) == "started a [g] r2 pid 200 | spawn 1 r2");
    sup.on_spawned(1, 2, 201, at(1.3));
    CHECK(take(sup) == "started b [g] r2 pid 201 | spawn 2 r2");
    sup.on_spawned(2, 2, 202, at(1.3));
    CHECK(take(sup) == "started c [g] r2 pid 202");
    // A root restart counts in every member's restarts; b also restarted itself once.
    CHECK(sup.service(0).restarts() == 1);
    CHECK(sup.service(1).restarts() == 2);
    CHECK(sup.service(2).restarts() == 1);
    for (std::size_t i = 0; i < 3; ++i) {
        CHECK(sup.service(i).state() == State::running);
        CHECK(sup.service(i).stopped_reason() == std::nullopt);
    }
}

TEST_CASE("the restarted group starts with a fresh intensity and fresh member policies") {
    Supervisor sup = group_running(2);
    fail_and_root_restart(sup, 1, 200);
    // b's backoff starts from its first step again.
    sup.on_exit(201, exited(1), at(10));
    std::vector<Event> restarting = events_of(sup.take_actions(), EventType::restarting);
    REQUIRE(restarting.size() == 1);
    CHECK(restarting[0].delay == 200ms);
    CHECK_FALSE(sup.shutting_down());  // the second of two root restarts
}

TEST_CASE("root restarts exhausted escalate and exit 1 once everything stopped") {
    Supervisor sup = group_running(1);
    fail_and_root_restart(sup, 1, 200);
    sup.on_exit(201, exited(1), at(10));
    std::vector<Action> actions = sup.take_actions();
    REQUIRE(events_of(actions, EventType::escalated).size() == 1);
    CHECK(events_of(actions, EventType::escalated)[0].reason ==
          "group g failed (1 restart event exceeds max_restarts 0); 1 of 1 root restart used");
    CHECK(sup.shutting_down());
    CHECK(only<ExitAction>(actions).empty());
    sup.on_exit(202, killed(SIGTERM), at(10.1));
    CHECK(only<ExitAction>(sup.take_actions()).empty());
    sup.on_exit(200, killed(SIGTERM), at(10.2));
    std::vector<ExitAction> exits = only<ExitAction>(sup.take_actions());
    REQUIRE(exits.size() == 1);
    CHECK(exits[0].status == 1);
}

TEST_CASE("root restarts that left the root within window are forgotten") {
    Supervisor sup = group_running(1, 10s);
    fail_and_root_restart(sup, 1, 200);
    fail_and_root_restart(sup, 20, 300);  // t=1 is out of the 10 s window
    CHECK_FALSE(sup.shutting_down());
    CHECK(sup.service(0).pid() == 300);
    sup.on_exit(301, exited(1), at(25));  // t=20 is still in it
    CHECK(sup.shutting_down());
}

TEST_CASE("a root-level escalate service that fails escalates directly") {
    config::ServiceSpec solo = spec("solo");
    solo.escalate = true;
    solo.restart.policy = config::RestartPolicy::never;
    config::DaemonSpec daemon;
    daemon.root.max_restarts = 5;  // root restarts are for groups, not for this
    Supervisor sup = supervisor({spec("other"), solo}, daemon);  // other 0, solo 1
    sup.start(at(0));
    sup.on_spawned(0, 1, 100, at(0));
    sup.on_spawned(1, 1, 101, at(0));
    sup.take_actions();
    sup.on_exit(101, exited(3), at(1));
    CHECK(take(sup) ==
          "exited solo r1 code 3 | cleanup 1 pgid 101 TERM grace 5000ms | stopped solo r1 | "
          "escalated  r0 | signal 0 r1 pid 100 TERM group +cont");
    sup.on_exit(100, exited(0), at(1.5));
    CHECK(take(sup) ==
          "exited other r1 code 0 by operator | cleanup 0 pgid 100 TERM grace 5000ms | "
          "stopped other r1 | exit 1");
}

TEST_CASE("an operator shutdown after an escalation still exits 1") {
    Supervisor sup = group_running(0);
    sup.on_exit(101, exited(1), at(1));
    sup.take_actions();
    sup.shutdown(at(1.05));  // SIGTERM meanwhile does not turn the status into 0
    sup.on_exit(102, killed(SIGTERM), at(1.1));
    sup.on_exit(100, killed(SIGTERM), at(1.2));
    std::vector<ExitAction> exits = only<ExitAction>(sup.take_actions());
    REQUIRE(exits.size() == 1);
    CHECK(exits[0].status == 1);
}

TEST_CASE("a plain shutdown of a healthy group exits 0") {
    Supervisor sup = group_running(0);
    sup.shutdown(at(1));
    sup.on_exit(102, killed(SIGTERM), at(1.1));
    sup.on_exit(101, killed(SIGTERM), at(1.2));
    sup.on_exit(100, killed(SIGTERM), at(1.3));
    std::vector<Action> actions = sup.take_actions();
    CHECK(events_of(actions, EventType::group_failed).empty());
    REQUIRE(only<ExitAction>(actions).size() == 1);
    CHECK(only<ExitAction>(actions)[0].status == 0);
}

}  // namespace
}  // namespace pkit::core
