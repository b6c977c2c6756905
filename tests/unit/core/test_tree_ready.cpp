// Group member order waits for readiness (SPEC §6: "each waits for the one before to
// be ready"): with members [a, b] and a [ready] probe on a, b is not launched while a
// is starting, however long that lasts, and is launched right after a's `ready`.

#include <doctest/doctest.h>

#include "daemon/core/supervisor.hpp"
#include "tests/unit/core/fake.hpp"

namespace pkit::core {
namespace {

using namespace test;

// Group g of a (0) and b (1) in that member order; a is ready once its exec probe,
// tried every 100ms, succeeds.
Supervisor group_with_ready_probe(config::Strategy strategy = config::Strategy::one_for_one) {
    config::DaemonSpec daemon;
    daemon.groups.push_back(
        config::GroupSpec{.name = "g", .strategy = strategy, .members = {"a", "b"}});
    config::ServiceSpec a = spec("a");
    a.ready.edit().probe.kind = config::ProbeKind::exec;
    a.ready.edit().probe.argv = {"test", "-f", "/nonexistent/flag"};
    a.ready.edit().probe.interval = 100ms;
    a.ready.edit().timeout = 30s;
    return supervisor({a, spec("b")}, daemon);
}

TEST_CASE("group member order: b waits for a's readiness, not for a's start") {
    Supervisor sup = group_with_ready_probe();
    sup.start(at(0));
    CHECK(trace(sup.take_actions()) == "spawn 0 r1");
    CHECK(sup.service(1).state() == State::waiting);
    sup.on_spawned(0, 1, 100, at(0));
    CHECK(trace(sup.take_actions()) == "started a [g] r1 pid 100");
    CHECK(sup.service(0).state() == State::starting);
    CHECK(sup.service(1).state() == State::waiting);
    CHECK(sup.unsatisfied_dependencies(1) == std::vector<std::string>{"a"});

    // Two seconds of failed readiness attempts: b is never launched.
    for (int k = 1; k <= 20; ++k) {
        const double t = 0.1 * k;
        CHECK(seconds(sup.next_deadline()) == doctest::Approx(t));
        sup.on_time(at(t));
        CHECK_MESSAGE(trace(sup.take_actions()) == "probe 0 r1 ready", "at " << t);
        sup.on_probe_result(0, 1, ProbePurpose::ready, false, at(t));
        CHECK_MESSAGE(trace(sup.take_actions()) == "", "at " << t);
        CHECK(sup.service(1).state() == State::waiting);
        CHECK(sup.service(1).run() == 0);
    }

    // a is ready at 2.1: its ready event, then b's launch, in that order.
    sup.on_time(at(2.1));
    CHECK(trace(sup.take_actions()) == "probe 0 r1 ready");
    sup.on_probe_result(0, 1, ProbePurpose::ready, true, at(2.1));
    CHECK(trace(sup.take_actions()) == "ready a [g] r1 | spawn 1 r1");
    CHECK(sup.unsatisfied_dependencies(1).empty());
    sup.on_spawned(1, 1, 101, at(2.1));
    CHECK(trace(sup.take_actions()) == "started b [g] r1 pid 101");
    CHECK(sup.service(0).state() == State::running);
    CHECK(sup.service(1).state() == State::running);
}

TEST_CASE("group member order: a ready probe result of another run does not release b") {
    Supervisor sup = group_with_ready_probe();
    sup.start(at(0));
    sup.on_spawned(0, 1, 100, at(0));
    sup.take_actions();
    // A stale result (run 7 never existed) and a liveness-purpose result are no readiness.
    sup.on_probe_result(0, 7, ProbePurpose::ready, true, at(0.05));
    sup.on_probe_result(0, 1, ProbePurpose::health, true, at(0.06));
    CHECK(trace(sup.take_actions()) == "");
    CHECK(sup.service(1).state() == State::waiting);
    CHECK(sup.service(0).state() == State::starting);
}

TEST_CASE("group member order: b stays waiting when a's readiness times out") {
    config::DaemonSpec daemon;
    daemon.groups.push_back(config::GroupSpec{.name = "g", .members = {"a", "b"}});
    config::ServiceSpec a = spec("a");
    a.ready.edit().notify = true;
    a.ready.edit().timeout = 1s;
    a.restart.policy = config::RestartPolicy::never;
    Supervisor sup = supervisor({a, spec("b")}, daemon);
    sup.start(at(0));
    sup.on_spawned(0, 1, 100, at(0));
    sup.take_actions();
    sup.on_time(at(1.0));
    CHECK(trace(sup.take_actions()) == "signal 0 r1 pid 100 TERM group +cont");
    sup.on_exit(100, killed(SIGTERM), at(1.1));
    std::vector<Action> actions = sup.take_actions();
    CHECK(only<SpawnAction>(actions).empty());
    CHECK(sup.service(0).state() == State::failed);
    CHECK(sup.service(1).state() == State::waiting);
    CHECK(sup.service(1).run() == 0);
}

}  // namespace
}  // namespace pkit::core
