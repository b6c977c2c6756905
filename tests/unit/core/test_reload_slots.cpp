// Service slots across reloads (SPEC §8, §13): a slot a reload retired goes to a service
// a later reload adds, once nothing holds it any more, so that services added and
// removed again and again (`scale` up and down, files come and go) leave the tables
// at their largest size instead of growing them a slot a service each time.

#include <doctest/doctest.h>

#include "daemon/core/supervisor.hpp"
#include "tests/unit/core/fake.hpp"

namespace pkit::core {
namespace {

using namespace test;
using Indices = std::vector<std::size_t>;

// `count` instances of `name`, as the loader makes them: NAME@1 .. NAME@count.
std::vector<config::ServiceSpec> instances(const std::string& name, int count) {
    std::vector<config::ServiceSpec> out;
    for (int k = 1; k <= count; ++k) {
        out.push_back(spec(name + "@" + std::to_string(k)));
    }
    return out;
}

// Every spawn the Supervisor asks for gets a pid (1000 + slot * 100 + run).
void spawn_all(Supervisor& sup, Now now) {
    for (const SpawnAction& spawn : only<SpawnAction>(sup.take_actions())) {
        sup.on_spawned(spawn.service, spawn.run,
                       static_cast<pid_t>(1000 + spawn.service * 100 + spawn.run), now);
    }
    sup.take_actions();
}

// Every process a stop signal went to exits of it.
void exit_signalled(Supervisor& sup, Now now) {
    for (const SignalAction& signal : only<SignalAction>(sup.take_actions())) {
        sup.on_exit(signal.pid, killed(signal.signal), now);
    }
    sup.take_actions();
}

TEST_CASE("reload gives the slot of a removed service that has ended to a service it adds") {
    Supervisor sup = supervisor({spec("a"), spec("b")});
    sup.start(at(0));
    spawn_all(sup, at(0));
    sup.reload(tree({spec("a")}), at(1));
    exit_signalled(sup, at(1.1));
    REQUIRE(sup.retired(1));

    ReloadOutcome outcome = sup.reload(tree({spec("a"), spec("c")}), at(2));
    CHECK(outcome.added == std::vector<std::string>{"c"});
    CHECK(sup.size() == 2);
    CHECK_FALSE(sup.retired(1));
    CHECK(sup.find("c") == 1);
    CHECK(sup.find("b") == std::nullopt);
    CHECK(sup.start_order() == Indices{0, 1});
    // A service of its own: its first run, no counters of the one before.
    const std::vector<SpawnAction> spawns = only<SpawnAction>(sup.take_actions());
    REQUIRE(spawns.size() == 1);
    CHECK(spawns[0].service == 1);
    CHECK(spawns[0].run == 1);
    sup.on_spawned(1, 1, 5000, at(2));
    CHECK(sup.service(1).name() == "c");
    CHECK(sup.service(1).run() == 1);
    CHECK(sup.service(1).pid() == 5000);
    CHECK(sup.service_of(5000) == 1);
}

TEST_CASE("thirty cycles of 100 instances up and down keep the slots at 100") {
    Supervisor sup = supervisor(instances("w", 1));
    sup.start(at(0));
    spawn_all(sup, at(0));
    double t = 1;
    for (int cycle = 0; cycle < 30; ++cycle) {
        sup.reload(tree(instances("w", 100)), at(t));
        spawn_all(sup, at(t + 0.1));
        sup.reload(tree(instances("w", 1)), at(t + 0.5));
        exit_signalled(sup, at(t + 0.6));
        t += 1;
    }
    INFO("slots after 30 cycles: " << sup.size());
    CHECK(sup.size() == 100);
    CHECK(sup.start_order().size() == 1);
    // Up once more: every instance runs, each in a slot of its own.
    sup.reload(tree(instances("w", 100)), at(t));
    spawn_all(sup, at(t + 0.1));
    CHECK(sup.size() == 100);
    std::vector<bool> seen(sup.size(), false);
    for (int k = 1; k <= 100; ++k) {
        auto slot = sup.find("w@" + std::to_string(k));
        REQUIRE(slot);
        CHECK_FALSE(seen[*slot]);
        seen[*slot] = true;
        CHECK(sup.service(*slot).state() == State::running);
    }
}

TEST_CASE("a removed service's slot is kept while its process runs or the caller holds it") {
    Supervisor sup = supervisor({spec("a"), spec("b")});
    sup.start(at(0));
    spawn_all(sup, at(0));
    sup.reload(tree({spec("a")}), at(1));
    sup.take_actions();  // b is stopping: its process has not exited

    sup.reload(tree({spec("a"), spec("c")}), at(2));
    CHECK(sup.size() == 3);
    CHECK(sup.find("c") == 2);
    CHECK(sup.retired(1));
    spawn_all(sup, at(2));

    // b's process exits; the caller still holds slot 1 (its pipes, a follower).
    sup.on_exit(1000 + 100 + 1, killed(SIGTERM), at(3));
    sup.take_actions();
    config::Tree with_d = tree({spec("a"), spec("c"), spec("d")});
    sup.reload_from(with_d, at(4), {false, true});
    CHECK(sup.size() == 4);
    CHECK(sup.find("d") == 3);
    spawn_all(sup, at(4));

    // Let go of: the next service added takes it.
    config::Tree next = tree({spec("a"), spec("c"), spec("d"), spec("e")});
    sup.reload_from(next, at(5), {});
    CHECK(sup.size() == 4);
    CHECK(sup.find("e") == 1);
}

}  // namespace
}  // namespace pkit::core
