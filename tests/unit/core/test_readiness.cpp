// pkitd's own readiness (SPEC §11): a service in each of the nine states makes pkitd
// ready or not, with the reason an operator reads in `pkitctl health` and /readyz.

#include <doctest/doctest.h>

#include "daemon/core/readiness.hpp"
#include "tests/unit/core/fake.hpp"

namespace pkit::core {
namespace {

using namespace test;

// The reason of service `name`, or "" when it does not keep pkitd from being ready.
std::string reason_of(const Readiness& r, const std::string& name) {
    for (const NotReady& n : r.not_ready) {
        if (n.name == name) {
            return n.reason;
        }
    }
    return "";
}

config::ServiceSpec with_ready_probe(config::ServiceSpec s) {
    s.ready.edit().probe.kind = config::ProbeKind::exec;
    s.ready.edit().probe.argv = {"true"};
    s.ready.edit().probe.interval = 100ms;
    return s;
}

// One service alone, brought to a state by `drive`; the readiness at `now`.
template <class Drive>
Readiness alone(config::ServiceSpec s, Drive drive, double now = 1.0) {
    Supervisor sup = supervisor({std::move(s)});
    sup.start(at(0));
    drive(sup);
    (void)sup.take_actions();
    return readiness(sup, at(now));
}

TEST_CASE("readiness: running and ready, done and operator-stopped services make pkitd ready") {
    CHECK(alone(spec("r"), [](Supervisor& sup) { sup.on_spawned(0, 1, 100, at(0)); }).ready);
    CHECK(alone(spec("d"), [](Supervisor& sup) {
              sup.on_spawned(0, 1, 100, at(0));
              sup.on_exit(100, exited(0), at(0.5));
          }).ready);
    config::ServiceSpec off = spec("o");
    off.autostart = false;
    Readiness stopped =
        alone(off, [](Supervisor& sup) { CHECK(sup.service(0).state() == State::stopped); });
    CHECK(stopped.ready);
    CHECK(stopped.not_ready.empty());
    // Stopped by the operator after running: still not counted.
    CHECK(alone(spec("s"), [](Supervisor& sup) {
              sup.on_spawned(0, 1, 100, at(0));
              sup.stop_service(0, at(0.1));
              sup.on_exit(100, killed(SIGTERM), at(0.2));
              CHECK(sup.service(0).state() == State::stopped);
          }).ready);
}

TEST_CASE(
    "readiness: waiting, starting, stopping, backoff, storm_pause and failed make pkitd not ready, "
    "each with its reason") {
    SUBCASE("starting, and waiting for it") {
        Supervisor sup = supervisor({with_ready_probe(spec("a")), spec_after("b", {"a"})});
        sup.start(at(0));
        sup.on_spawned(0, 1, 100, at(0));
        Readiness r = readiness(sup, at(0.05));
        CHECK_FALSE(r.ready);
        REQUIRE(r.not_ready.size() == 2);
        CHECK(r.not_ready[0] == NotReady{"a", State::starting, "starting: run 1 not ready yet"});
        CHECK(r.not_ready[1] == NotReady{"b", State::waiting, "waiting: for a"});
    }
    SUBCASE("stopping") {
        Readiness r = alone(spec("p"), [](Supervisor& sup) {
            sup.on_spawned(0, 1, 100, at(0));
            sup.restart_service(0, at(0.1));
            CHECK(sup.service(0).state() == State::stopping);
        });
        CHECK_FALSE(r.ready);
        CHECK(reason_of(r, "p") == "stopping: run 1");
    }
    SUBCASE("backoff names the restart and the time left") {
        config::ServiceSpec s = spec("b");
        s.restart.backoff_initial = 2s;
        Readiness r = alone(
            s,
            [](Supervisor& sup) {
                sup.on_spawned(0, 1, 100, at(0));
                sup.on_exit(100, exited(1), at(0.5));
                CHECK(sup.service(0).state() == State::backoff);
            },
            0.9);
        CHECK_FALSE(r.ready);
        CHECK(r.not_ready[0].state == State::backoff);
        CHECK(reason_of(r, "b") == "backoff: restart 1 in 1.6 s");
    }
    SUBCASE("storm_pause") {
        config::ServiceSpec s = spec("st");
        s.storm.edit().pause = 10s;
        s.storm.edit().threshold = 1.0;
        Readiness r = alone(s, [](Supervisor& sup) {
            sup.on_spawned(0, 1, 100, at(0));
            sup.on_exit(100, exited(1), at(0.5));
            CHECK(sup.service(0).state() == State::storm_pause);
        });
        CHECK_FALSE(r.ready);
        CHECK(reason_of(r, "st") == "storm_pause: restart 1 in 9.5 s");
    }
    SUBCASE("failed names why supervision ended") {
        config::ServiceSpec s = spec("f");
        s.restart.max_restarts = 0;
        Readiness r = alone(s, [](Supervisor& sup) {
            sup.on_spawned(0, 1, 100, at(0));
            sup.on_exit(100, exited(1), at(0.5));
            CHECK(sup.service(0).state() == State::failed);
        });
        CHECK_FALSE(r.ready);
        CHECK(r.not_ready[0] == NotReady{"f", State::failed, "failed: restarts_exhausted"});
    }
}

TEST_CASE("readiness: a running service with an unhealthy liveness status is not ready") {
    config::ServiceSpec s = spec("h");
    s.health.edit().kind = config::ProbeKind::exec;
    s.health.edit().argv = {"false"};
    s.health.edit().interval = 1s;
    s.health.edit().failures = 3;
    Supervisor sup = supervisor({s});
    sup.start(at(0));
    sup.on_spawned(0, 1, 100, at(0));
    CHECK(readiness(sup, at(0.5)).ready);  // unknown is not unhealthy
    sup.on_time(at(1));
    sup.on_probe_result(0, 1, ProbePurpose::health, false, at(1));
    sup.on_time(at(2));
    sup.on_probe_result(0, 1, ProbePurpose::health, false, at(2));
    REQUIRE(sup.service(0).state() == State::running);
    Readiness r = readiness(sup, at(2.1));
    CHECK_FALSE(r.ready);
    CHECK(reason_of(r, "h") == "unhealthy: 2 failed probes");
    sup.on_time(at(3));
    sup.on_probe_result(0, 1, ProbePurpose::health, true, at(3));
    CHECK(readiness(sup, at(3.1)).ready);
}

TEST_CASE("readiness: affects_readiness = false leaves a failed helper out") {
    config::ServiceSpec helper = spec("helper");
    helper.restart.max_restarts = 0;
    helper.affects_readiness = false;
    Supervisor sup = supervisor({spec("app"), helper});
    sup.start(at(0));
    sup.on_spawned(0, 1, 100, at(0));
    sup.on_spawned(1, 1, 101, at(0));
    sup.on_exit(101, exited(1), at(0.5));
    REQUIRE(sup.service(1).state() == State::failed);
    Readiness r = readiness(sup, at(1));
    CHECK(r.ready);
    CHECK(r.not_ready.empty());
}

TEST_CASE("readiness: pkitd shutting down is never ready") {
    Supervisor sup = supervisor({spec("a")});
    sup.start(at(0));
    sup.on_spawned(0, 1, 100, at(0));
    REQUIRE(readiness(sup, at(0.1)).ready);
    sup.shutdown(at(0.2));
    CHECK_FALSE(readiness(sup, at(0.3)).ready);
    sup.on_exit(100, killed(SIGTERM), at(0.4));
    Readiness after = readiness(sup, at(0.5));
    CHECK_FALSE(after.ready);
}

}  // namespace
}  // namespace pkit::core
