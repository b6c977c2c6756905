// Group failure (SPEC §6): restart intensity counted in restart events over a sliding
// window, escalate members, root restarts of a failed group and, past [root]
// max_restarts, escalation to pkitd's exit status 1.

#include <doctest/doctest.h>

#include "daemon/core/supervisor.hpp"
#include "tests/unit/core/fake.hpp"

namespace pkit::core {
namespace {

using namespace test;

struct GroupOptions {
    config::Strategy strategy = config::Strategy::one_for_one;
    int max_restarts = -1;
    Duration within = 0s;
    int root_max_restarts = 0;
    Duration root_within = 60s;
    bool b_escalates = false;
};

// Group g of a (0), b (1), c (2), all running at `t` with pids 100, 101, 102.
Supervisor group_running(const GroupOptions& o, double t = 0) {
    config::DaemonSpec daemon;
    daemon.root = {.max_restarts = o.root_max_restarts, .within = o.root_within};
    daemon.groups.push_back(config::GroupSpec{.name = "g",
                                              .strategy = o.strategy,
                                              .members = {"a", "b", "c"},
                                              .max_restarts = o.max_restarts,
                                              .within = o.within});
    config::ServiceSpec b = spec("b");
    if (o.b_escalates) {
        b.escalate = true;
        b.restart.max_restarts = 0;
    }
    Supervisor sup = supervisor({spec("a"), b, spec("c")}, daemon);
    sup.start(at(t));
    sup.on_spawned(0, 1, 100, at(t));
    sup.on_spawned(1, 1, 101, at(t));
    sup.on_spawned(2, 1, 102, at(t));
    sup.take_actions();
    return sup;
}

// Crashes the running member `i` at `t` and brings it back when its backoff ends.
void crash_and_return(Supervisor& sup, std::size_t i, double t, pid_t next_pid) {
    sup.on_exit(sup.service(i).pid(), exited(1), at(t));
    REQUIRE(sup.service(i).restart_at());
    Now back = at(*seconds(sup.service(i).restart_at()));
    sup.on_time(back);
    sup.on_spawned(i, sup.service(i).run(), next_pid, back);
    sup.take_actions();
}

TEST_CASE("group intensity counts one restart event per crash however many members restart") {
    Supervisor sup = group_running({.strategy = config::Strategy::one_for_all, .max_restarts = 1});
    sup.on_exit(101, exited(1), at(1));
    sup.on_exit(102, killed(SIGTERM), at(1.1));
    sup.on_exit(100, killed(SIGTERM), at(1.2));
    sup.on_spawned(0, 2, 200, at(1.2));
    sup.on_spawned(1, 2, 201, at(1.2));
    sup.on_spawned(2, 2, 202, at(1.2));
    // Three members restarted, yet that was one event: max_restarts 1 is not exceeded.
    std::vector<Action> actions = sup.take_actions();
    CHECK(events_of(actions, EventType::group_failed).empty());
    CHECK(sup.service(0).state() == State::running);
    CHECK_FALSE(sup.shutting_down());

    sup.on_exit(200, exited(1), at(2));  // the second event exceeds it
    actions = sup.take_actions();
    REQUIRE(events_of(actions, EventType::group_failed).size() == 1);
    Event failed = events_of(actions, EventType::group_failed)[0];
    CHECK(failed.group == "g");
    CHECK(failed.service.empty());
    CHECK(failed.reason.find("exceed max_restarts 1") != std::string::npos);
    CHECK(events_of(actions, EventType::escalated).size() == 1);
    CHECK(sup.shutting_down());
}

TEST_CASE("group intensity forgets restart events that left the within window") {
    Supervisor sup = group_running({.max_restarts = 1, .within = 10s});
    crash_and_return(sup, 0, 1, 200);
    crash_and_return(sup, 0, 12, 201);  // t=1 has slid out: one event in the window
    CHECK_FALSE(sup.shutting_down());
    sup.on_exit(101, exited(1), at(13));  // t=12 and t=13: two events in 10 s
    std::vector<Event> failed = events_of(sup.take_actions(), EventType::group_failed);
    REQUIRE(failed.size() == 1);
    CHECK(failed[0].reason == "2 restart events in 10s exceed max_restarts 1");
}

TEST_CASE("unlimited group intensity never fails the group") {
    Supervisor sup = group_running({.max_restarts = -1});
    for (int k = 0; k < 20; ++k) {
        crash_and_return(sup, k % 3, 1 + 40 * k, 300 + k);
    }
    CHECK_FALSE(sup.shutting_down());
    CHECK(sup.service(0).restarts() == 7);
}

TEST_CASE("a failed group escalates at once with the default root max_restarts 0") {
    Supervisor sup = group_running({.max_restarts = 0});
    sup.on_exit(101, exited(1), at(1));
    CHECK(take(sup) ==
          "exited b [g] r1 code 1 | cleanup 1 pgid 101 TERM grace 5000ms | "
          "restarting b [g] r1 in 200ms #1 | group_failed  [g] r0 | escalated  r0 | "
          "signal 2 r1 pid 102 TERM group +cont");
    // Everything stops in reverse start order; the exit comes only once all are down.
    sup.on_exit(102, killed(SIGTERM), at(1.1));
    CHECK(take(sup) ==
          "exited c [g] r1 signal TERM by operator | cleanup 2 pgid 102 TERM grace 5000ms | "
          "stopped c [g] r1 | stopped b [g] r1 | signal 0 r1 pid 100 TERM group +cont");
    sup.on_time(at(1.2));  // b's backoff would have ended: nothing restarts now
    CHECK(take(sup) == "");
    sup.on_exit(100, killed(SIGTERM), at(1.3));
    CHECK(take(sup) ==
          "exited a [g] r1 signal TERM by operator | cleanup 0 pgid 100 TERM grace 5000ms | "
          "stopped a [g] r1 | exit 1");
}

TEST_CASE("an escalate member that ends failed fails its group") {
    Supervisor sup = group_running({.b_escalates = true});
    sup.on_exit(101, exited(1), at(1));
    std::vector<Action> actions = sup.take_actions();
    CHECK(events_of(actions, EventType::restarts_exhausted).size() == 1);
    REQUIRE(events_of(actions, EventType::group_failed).size() == 1);
    CHECK(events_of(actions, EventType::group_failed)[0].reason.find("service b failed") == 0);
    CHECK(events_of(actions, EventType::escalated).size() == 1);
    CHECK(sup.shutting_down());
}

TEST_CASE("an escalate member that ends done or a failed member without escalate fails nothing") {
    SUBCASE("escalate and a clean exit") {
        Supervisor sup = group_running({.b_escalates = true});
        sup.on_exit(101, exited(0), at(1));
        CHECK(sup.service(1).state() == State::done);
        CHECK(events_of(sup.take_actions(), EventType::group_failed).empty());
        CHECK_FALSE(sup.shutting_down());
    }
    SUBCASE("no escalate and a crash that ends supervision") {
        config::DaemonSpec daemon;
        daemon.groups.push_back(config::GroupSpec{.name = "g", .members = {"x"}});
        config::ServiceSpec x = spec("x");
        x.restart.policy = config::RestartPolicy::never;
        Supervisor sup = supervisor({x}, daemon);
        sup.start(at(0));
        sup.on_spawned(0, 1, 100, at(0));
        sup.on_exit(100, exited(1), at(1));
        CHECK(sup.service(0).state() == State::failed);
        CHECK(events_of(sup.take_actions(), EventType::group_failed).empty());
        CHECK_FALSE(sup.shutting_down());
    }
}

}  // namespace
}  // namespace pkit::core
