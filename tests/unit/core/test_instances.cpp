// Instances (SPEC §13) in the core: a file's name in `after` and in a group's members
// stands for the instances the file has now, so a reload that adds or removes some (as
// `scale` is applied) moves the dependencies and the group's members with them, and
// changes neither the dependents nor the group.

#include <doctest/doctest.h>

#include "daemon/core/supervisor.hpp"
#include "tests/unit/core/fake.hpp"

namespace pkit::core {
namespace {

using namespace test;
using Names = std::vector<std::string>;

config::ServiceSpec instance_spec(const std::string& file, unsigned k) {
    config::ServiceSpec s = spec(file + "@" + std::to_string(k));
    s.file = "services/" + file + ".toml";
    s.instance = k;
    return s;
}

// api (0) after the file worker, and worker@1..count (1..count).
config::Tree worker_tree(unsigned count, config::DaemonSpec daemon = {}) {
    std::vector<config::ServiceSpec> services = {spec_after("api", {"worker"})};
    for (unsigned k = 1; k <= count; ++k) {
        services.push_back(instance_spec("worker", k));
    }
    config::Tree t = tree(std::move(services));
    t.daemon = std::move(daemon);
    return t;
}

Names dependency_names(const Supervisor& sup, std::size_t service) {
    return sup.unsatisfied_dependencies(service);
}

TEST_CASE("after NAME waits for the instances a reload added, and no more for removed ones") {
    Supervisor sup(worker_tree(2), [] { return 0.5; });
    sup.start(at(0));
    CHECK(take(sup) == "spawn 1 r1 | spawn 2 r1");
    CHECK(dependency_names(sup, 0) == Names{"worker@1", "worker@2"});
    sup.on_spawned(1, 1, 101, at(0.1));
    sup.on_spawned(2, 1, 102, at(0.1));
    CHECK(take(sup) == "started worker@1 r1 pid 101 | started worker@2 r1 pid 102 | spawn 0 r1");
    sup.on_spawned(0, 1, 100, at(0.2));
    sup.take_actions();

    // Scaled to 3: worker@3 starts; api, worker@1 and worker@2 are untouched.
    ReloadOutcome up = sup.reload(worker_tree(3), at(1));
    CHECK(up.added == Names{"worker@3"});
    CHECK(up.changed.empty());
    CHECK(up.unchanged == 3);
    CHECK(take(sup) == "reload  r0 | spawn 3 r1");
    CHECK(sup.service(0).pid() == 100);

    // api restarted now waits for worker@3, still starting.
    sup.restart_service(0, at(2));
    sup.take_actions();
    sup.on_exit(100, killed(SIGTERM), at(2.1));
    CHECK(only<SpawnAction>(sup.take_actions()).empty());
    CHECK(sup.service(0).state() == State::waiting);
    CHECK(dependency_names(sup, 0) == Names{"worker@3"});
    sup.on_spawned(3, 1, 103, at(2.2));
    CHECK(take(sup) == "started worker@3 r1 pid 103 | spawn 0 r2");
    sup.on_spawned(0, 2, 200, at(2.3));
    sup.take_actions();

    // Scaled to 1: worker@2 and worker@3 stop; api waits for worker@1 alone.
    ReloadOutcome down = sup.reload(worker_tree(1), at(3));
    CHECK(down.removed == Names{"worker@2", "worker@3"});
    CHECK(down.changed.empty());
    sup.take_actions();
    sup.on_exit(102, killed(SIGTERM), at(3.1));
    sup.on_exit(103, killed(SIGTERM), at(3.1));
    sup.take_actions();
    sup.stop_service(1, at(4));
    sup.take_actions();
    sup.on_exit(101, killed(SIGTERM), at(4.1));
    sup.take_actions();
    sup.restart_service(0, at(5));
    sup.take_actions();
    sup.on_exit(200, killed(SIGTERM), at(5.1));
    CHECK(only<SpawnAction>(sup.take_actions()).empty());
    CHECK(dependency_names(sup, 0) == Names{"worker@1"});
}

// Group g (one_for_all) of db, the file worker and api, in that order; all running.
config::DaemonSpec worker_group() {
    config::DaemonSpec daemon;
    daemon.groups.push_back(config::GroupSpec{.name = "g",
                                              .strategy = config::Strategy::one_for_all,
                                              .members = {"db", "worker", "api"}});
    return daemon;
}

config::Tree grouped_workers(unsigned count) {
    config::Tree t = worker_tree(count, worker_group());
    t.services[0].after.clear();
    t.services.push_back(spec("db"));
    std::ranges::stable_sort(t.services, {}, &config::ServiceSpec::name);
    return t;
}

std::vector<std::string> member_names(const Supervisor& sup) {
    std::vector<std::string> out;
    for (std::size_t i : sup.groups()[0].members) {
        out.push_back(sup.service(i).name());
    }
    return out;
}

TEST_CASE("a reload that changes a group member file's instances applies no strategy") {
    // api (0), db (1), worker@1 (2), worker@2 (3).
    Supervisor sup(grouped_workers(2), [] { return 0.5; });
    sup.start(at(0));
    // Each member starts once the one before it has: spawned as asked, pid 100 + index.
    for (auto spawns = only<SpawnAction>(sup.take_actions()); !spawns.empty();
         spawns = only<SpawnAction>(sup.take_actions())) {
        for (const SpawnAction& spawn : spawns) {
            sup.on_spawned(spawn.service, spawn.run, 100 + static_cast<pid_t>(spawn.service),
                           at(0));
        }
    }
    for (std::size_t i = 0; i < 4; ++i) {
        REQUIRE(sup.service(i).state() == State::running);
    }
    CHECK(member_names(sup) == Names{"db", "worker@1", "worker@2", "api"});
    const pid_t api = sup.service(0).pid();
    const pid_t db = sup.service(1).pid();
    const pid_t one = sup.service(2).pid();
    const pid_t two = sup.service(3).pid();

    ReloadOutcome up = sup.reload(grouped_workers(3), at(1));
    CHECK(up.added == Names{"worker@3"});
    CHECK(up.changed.empty());
    CHECK(up.unchanged == 4);
    // Only the new instance starts: no member is stopped.
    CHECK(take(sup) == "reload  r0 | spawn 4 r1");
    sup.on_spawned(4, 1, 104, at(1.1));
    CHECK(take(sup) == "started worker@3 [g] r1 pid 104");
    CHECK(member_names(sup) == Names{"db", "worker@1", "worker@2", "worker@3", "api"});
    CHECK(sup.groups()[0].stop_queue.empty());

    ReloadOutcome down = sup.reload(grouped_workers(1), at(2));
    CHECK(down.removed == Names{"worker@2", "worker@3"});
    CHECK(down.changed.empty());
    auto signals = only<SignalAction>(sup.take_actions());
    REQUIRE(signals.size() == 2);
    CHECK(signals[0].pid + signals[1].pid == two + 104);
    sup.on_exit(two, killed(SIGTERM), at(2.1));
    sup.on_exit(104, killed(SIGTERM), at(2.1));
    // The removed instances' ends are no member restart: nothing else stops or starts.
    auto after_exit = sup.take_actions();
    CHECK(only<SignalAction>(after_exit).empty());
    CHECK(only<SpawnAction>(after_exit).empty());
    CHECK(member_names(sup) == Names{"db", "worker@1", "api"});
    CHECK(sup.service(0).pid() == api);
    CHECK(sup.service(1).pid() == db);
    CHECK(sup.service(2).pid() == one);
    CHECK(sup.service(0).run() == 1);
    CHECK(sup.service(1).run() == 1);

    // The strategy still applies to a crash, over the members the group has now.
    sup.on_exit(one, exited(1), at(3));
    auto crash = only<SignalAction>(sup.take_actions());
    REQUIRE(crash.size() == 1);
    CHECK(crash[0].pid == api);  // the last member first, in reverse start order
}

TEST_CASE("an instance scaled away while its group's strategy is stopping members stays gone") {
    // api (0), db (1), worker@1 (2), worker@2 (3), all running, pids 100 + index.
    Supervisor sup(grouped_workers(2), [] { return 0.5; });
    sup.start(at(0));
    for (auto spawns = only<SpawnAction>(sup.take_actions()); !spawns.empty();
         spawns = only<SpawnAction>(sup.take_actions())) {
        for (const SpawnAction& spawn : spawns) {
            sup.on_spawned(spawn.service, spawn.run, 100 + static_cast<pid_t>(spawn.service),
                           at(0));
        }
    }
    // db crashes: one_for_all stops api, then worker@2, then worker@1.
    sup.on_exit(101, exited(1), at(1));
    auto first = only<SignalAction>(sup.take_actions());
    REQUIRE(first.size() == 1);
    CHECK(first[0].pid == 100);
    REQUIRE(sup.groups()[0].stop_queue.size() == 3);

    // Scaled to 1 meanwhile: worker@2 leaves the group and its queue.
    ReloadOutcome down = sup.reload(grouped_workers(1), at(1.05));
    CHECK(down.removed == Names{"worker@2"});
    CHECK(down.changed.empty());
    std::vector<Action> actions = sup.take_actions();
    CHECK(sup.groups()[0].stop_queue.size() == 2);
    std::size_t spawned_removed = 0;
    auto count = [&](const std::vector<Action>& list) {
        for (const SpawnAction& spawn : only<SpawnAction>(list)) {
            spawned_removed += spawn.service == 3 ? 1 : 0;
        }
    };
    count(actions);
    sup.on_exit(103, killed(SIGTERM), at(1.1));
    count(sup.take_actions());
    sup.on_exit(100, killed(SIGTERM), at(1.1));
    auto next = sup.take_actions();
    count(next);
    auto stops = only<SignalAction>(next);
    REQUIRE(stops.size() == 1);
    CHECK(stops[0].pid == 102);  // worker@1, the member before api now
    sup.on_exit(102, killed(SIGTERM), at(1.2));
    count(sup.take_actions());
    // Everything starts again in start order; worker@2 never does.
    for (double t = 1.2; t < 5; t += 0.2) {
        sup.on_time(at(t));
        for (auto spawns = only<SpawnAction>(sup.take_actions()); !spawns.empty();
             spawns = only<SpawnAction>(sup.take_actions())) {
            for (const SpawnAction& spawn : spawns) {
                spawned_removed += spawn.service == 3 ? 1 : 0;
                sup.on_spawned(spawn.service, spawn.run, 200 + static_cast<pid_t>(spawn.service),
                               at(t));
            }
        }
    }
    CHECK(spawned_removed == 0);
    CHECK(sup.service(0).state() == State::running);
    CHECK(sup.service(1).state() == State::running);
    CHECK(sup.service(2).state() == State::running);
    CHECK(sup.service(3).state() != State::running);
}

}  // namespace
}  // namespace pkit::core
