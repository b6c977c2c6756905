// Reload and the tree (SPEC §6, §8): a change to a group's definition changes its
// members; an unchanged group keeps its intensity window and the work in progress
// (a strategy's stops, a root restart).

#include <doctest/doctest.h>

#include "daemon/core/supervisor.hpp"
#include "tests/unit/core/fake.hpp"

namespace pkit::core {
namespace {

using namespace test;
using Names = std::vector<std::string>;

config::DaemonSpec daemon_with(config::GroupSpec group, int root_max_restarts = 0) {
    config::DaemonSpec daemon;
    daemon.root.max_restarts = root_max_restarts;
    daemon.groups.push_back(std::move(group));
    return daemon;
}

config::Tree tree_with(config::DaemonSpec daemon) {
    config::Tree t = tree({spec("a"), spec("b"), spec("solo")});
    t.daemon = std::move(daemon);
    return t;
}

// Services a (0), b (1), solo (2), all running with pids 100, 101, 102; the groups as
// `daemon` says.
Supervisor running(const config::DaemonSpec& daemon) {
    config::Tree t = tree_with(daemon);
    Supervisor sup(std::move(t), [] { return 0.5; });
    sup.start(at(0));
    sup.on_spawned(0, 1, 100, at(0));
    sup.on_spawned(1, 1, 101, at(0));
    sup.on_spawned(2, 1, 102, at(0));
    sup.take_actions();
    return sup;
}

const config::GroupSpec k_group{.name = "g", .members = {"a", "b"}};

TEST_CASE("reload of a group's changed strategy marks every member changed") {
    Supervisor sup = running(daemon_with(k_group));
    config::GroupSpec changed = k_group;
    changed.strategy = config::Strategy::one_for_all;
    ReloadOutcome outcome = sup.reload(tree_with(daemon_with(changed)), at(5));
    CHECK(outcome.changed == Names{"a", "b"});
    CHECK(outcome.unchanged == 1);
    CHECK(sup.groups()[0].spec.strategy == config::Strategy::one_for_all);
    CHECK(sup.service(2).pid() == 102);
    sup.take_actions();
    // Both restart, in start order again: b waits for a.
    sup.on_exit(101, killed(SIGTERM), at(5.1));
    sup.on_exit(100, killed(SIGTERM), at(5.1));
    std::vector<SpawnAction> spawns = only<SpawnAction>(sup.take_actions());
    REQUIRE(spawns.size() == 1);
    CHECK(spawns[0].service == 0);
    sup.on_spawned(0, 2, 200, at(5.2));
    CHECK(take(sup) == "started a [g] r2 pid 200 | spawn 1 r2");
}

TEST_CASE("reload of a group's changed intensity or members marks its members changed") {
    Supervisor sup = running(daemon_with(k_group));
    config::GroupSpec changed = k_group;
    SUBCASE("max_restarts") {
        changed.max_restarts = 3;
    }
    SUBCASE("member order") {
        changed.members = {"b", "a"};
    }
    ReloadOutcome outcome = sup.reload(tree_with(daemon_with(changed)), at(5));
    CHECK(outcome.changed == Names{"a", "b"});
    CHECK(outcome.unchanged == 1);
}

TEST_CASE("reload moving a service into a group changes it and the group's members") {
    Supervisor sup = running(daemon_with(k_group));
    config::GroupSpec changed = k_group;
    changed.members = {"a", "b", "solo"};
    ReloadOutcome outcome = sup.reload(tree_with(daemon_with(changed)), at(5));
    CHECK(outcome.changed == Names{"a", "b", "solo"});
    CHECK(outcome.unchanged == 0);
    CHECK(sup.service(2).group() == "g");
}

TEST_CASE("reload of an unchanged group keeps its intensity window") {
    config::GroupSpec limited = k_group;
    limited.max_restarts = 1;
    Supervisor sup = running(daemon_with(limited));
    sup.on_exit(100, exited(1), at(1));  // one restart event
    sup.on_time(at(1.2));
    sup.on_spawned(0, 2, 200, at(1.2));
    sup.take_actions();
    ReloadOutcome outcome = sup.reload(tree_with(daemon_with(limited)), at(2));
    CHECK(outcome.unchanged == 3);
    sup.on_exit(101, exited(1), at(3));  // the second exceeds max_restarts 1
    CHECK(events_of(sup.take_actions(), EventType::group_failed).size() == 1);
}

TEST_CASE("reload during a one_for_all restart lets the strategy finish") {
    config::GroupSpec all{
        .name = "g", .strategy = config::Strategy::one_for_all, .members = {"a", "b", "solo"}};
    Supervisor sup = running(daemon_with(all));
    sup.on_exit(102, exited(1), at(1));  // solo crashes: b is stopped, then a
    CHECK(take(sup).ends_with("signal 1 r1 pid 101 TERM group +cont"));
    ReloadOutcome outcome = sup.reload(tree_with(daemon_with(all)), at(1.05));
    CHECK(outcome.unchanged == 3);
    CHECK(take(sup) == "reload  r0");
    sup.on_exit(101, killed(SIGTERM), at(1.1));
    CHECK(take(sup) ==
          "exited b [g] r1 signal TERM by operator | cleanup 1 pgid 101 TERM grace 5000ms | "
          "signal 0 r1 pid 100 TERM group +cont");
    sup.on_exit(100, killed(SIGTERM), at(1.15));
    CHECK(take(sup).ends_with("spawn 0 r2"));
    CHECK(sup.service(0).restarts() == 1);
    CHECK(sup.service(1).restarts() == 1);
}

TEST_CASE("reload during a root restart of an unchanged group lets it finish") {
    config::GroupSpec fragile = k_group;
    fragile.max_restarts = 0;
    config::DaemonSpec daemon = daemon_with(fragile, 1);
    Supervisor sup = running(daemon);
    sup.on_exit(101, exited(1), at(1));  // g fails: b is in backoff, a is being stopped
    CHECK(events_of(sup.take_actions(), EventType::group_failed).size() == 1);
    ReloadOutcome outcome = sup.reload(tree_with(daemon), at(1.05));
    CHECK(outcome.unchanged == 3);
    sup.take_actions();
    sup.on_exit(100, killed(SIGTERM), at(1.1));
    std::vector<SpawnAction> spawns = only<SpawnAction>(sup.take_actions());
    REQUIRE(spawns.size() == 1);
    CHECK(spawns[0].service == 0);
    sup.on_spawned(0, 2, 200, at(1.1));
    CHECK(take(sup) == "started a [g] r2 pid 200 | spawn 1 r2");
    CHECK(sup.service(0).restarts() == 1);
    CHECK(sup.service(1).restarts() == 2);
}

}  // namespace
}  // namespace pkit::core
