// Liveness timing on the fake clock (SPEC §3): the first probe runs one `interval`
// after the run starts, or after it becomes ready when [ready] is set, never sooner;
// one success resets the failure streak; a `health` event goes out on each change of
// status and only then; and a liveness kill of a run that ignores the stop signal is
// followed by SIGKILL after `stop.timeout`.

#include <doctest/doctest.h>

#include "daemon/core/service.hpp"
#include "tests/unit/core/fake.hpp"

namespace pkit::core {
namespace {

using namespace test;

// A liveness-probed service: exec probe every `interval`, `failures` in a row kill.
config::ServiceSpec probed(int failures, Duration interval = 1s) {
    config::ServiceSpec s = spec("svc");
    s.command = {"/bin/sleep", "1000"};
    s.health.edit().kind = config::ProbeKind::exec;
    s.health.edit().argv = {"/bin/true"};
    s.health.edit().interval = interval;
    s.health.edit().failures = failures;
    s.stop.timeout = 3s;
    return s;
}

// The liveness probes requested among `actions`.
std::size_t health_probes(const Actions& actions) {
    std::size_t n = 0;
    for (const ProbeAction& p : only<ProbeAction>(actions)) {
        n += p.purpose == ProbePurpose::health ? 1 : 0;
    }
    return n;
}

// The `status` words of the health events among `actions`.
std::vector<std::string> health_words(const Actions& actions) {
    std::vector<std::string> words;
    for (const Event& e : events_of(actions, EventType::health)) {
        words.push_back(e.reason);
    }
    return words;
}

// Fires the due liveness probe at `t` (failing the case unless exactly that one is
// asked for) and answers it with `ok` at the same instant.
void probe_at(Driver& d, double t, bool ok) {
    d.svc.on_time(at(t), d.out);
    REQUIRE_MESSAGE(trace(d.out) == "probe 0 r" + std::to_string(d.svc.run()) + " health",
                    "at " << t);
    d.out.clear();
    d.svc.on_probe_result(d.svc.run(), ProbePurpose::health, ok, at(t), d.out);
}

TEST_CASE("liveness without [ready]: the first probe comes one interval after the start") {
    Driver d(probed(3));
    d.start(at(0));
    CHECK(d.take() == "spawn 0 r1 | started svc r1 pid 100");
    CHECK(d.svc.state() == State::running);
    CHECK(seconds(d.svc.next_deadline()) == doctest::Approx(1.0));
    CHECK(d.svc.health() == HealthStatus::unknown);

    for (double t : {0.0, 0.1, 0.5, 0.9, 0.999}) {
        d.svc.on_time(at(t), d.out);
        CHECK_MESSAGE(d.take() == "", "at " << t);
    }
    d.svc.on_time(at(1.0), d.out);
    CHECK(d.take() == "probe 0 r1 health");
    // While the attempt is in flight, no second one is asked for.
    d.svc.on_time(at(1.5), d.out);
    CHECK(d.take() == "");

    // The next one is an interval after the result, not after the request.
    d.svc.on_probe_result(1, ProbePurpose::health, true, at(1.6), d.out);
    CHECK(health_words(d.out) == std::vector<std::string>{"healthy"});
    d.out.clear();
    CHECK(seconds(d.svc.next_deadline()) == doctest::Approx(2.6));
    d.svc.on_time(at(2.5), d.out);
    CHECK(d.take() == "");
    d.svc.on_time(at(2.6), d.out);
    CHECK(d.take() == "probe 0 r1 health");
}

TEST_CASE(
    "liveness with a [ready] probe: no liveness probe before ready, the first one interval after") {
    config::ServiceSpec s = probed(1);
    s.ready.edit().probe.kind = config::ProbeKind::exec;
    s.ready.edit().probe.argv = {"/bin/true"};
    s.ready.edit().probe.interval = 200ms;
    s.ready.edit().timeout = 30s;
    Driver d(s);
    d.start(at(0));
    CHECK(d.take() == "spawn 0 r1 | started svc r1 pid 100");
    CHECK(d.svc.state() == State::starting);

    // Three seconds of failed readiness attempts: only ready probes are asked for.
    Actions all;
    for (int k = 1; k <= 15; ++k) {
        const double t = 0.2 * k;
        d.svc.on_time(at(t), d.out);
        CHECK_MESSAGE(trace(d.out) == "probe 0 r1 ready", "at " << t);
        all.insert(all.end(), d.out.begin(), d.out.end());
        d.out.clear();
        d.svc.on_probe_result(1, ProbePurpose::ready, false, at(t), d.out);
        CHECK(d.take() == "");
    }
    CHECK(health_probes(all) == 0);
    CHECK(d.svc.state() == State::starting);

    // Ready at 3.05: the first liveness probe is due at 4.05, not before.
    d.svc.on_time(at(3.2), d.out);
    CHECK(d.take() == "probe 0 r1 ready");
    d.svc.on_probe_result(1, ProbePurpose::ready, true, at(3.25), d.out);
    CHECK(d.take() == "ready svc r1");
    CHECK(d.svc.state() == State::running);
    CHECK(seconds(d.svc.next_deadline()) == doctest::Approx(4.25));
    for (double t : {3.3, 3.5, 4.0, 4.249}) {
        d.svc.on_time(at(t), d.out);
        CHECK_MESSAGE(d.take() == "", "at " << t);
    }
    d.svc.on_time(at(4.25), d.out);
    CHECK(d.take() == "probe 0 r1 health");
}

TEST_CASE("liveness with [ready] notify: the first probe comes one interval after READY=1") {
    config::ServiceSpec s = probed(1);
    s.ready.edit().notify = true;
    s.ready.edit().timeout = 30s;
    Driver d(s);
    d.start(at(0));
    d.out.clear();
    for (double t : {0.5, 1.0, 1.5, 2.0}) {
        d.svc.on_time(at(t), d.out);
        CHECK_MESSAGE(d.take() == "", "at " << t);
    }
    NotifyMessage ready;
    ready.ready = true;
    d.svc.on_notify(1, ready, at(2.5), d.out);
    CHECK(d.take() == "ready svc r1");
    CHECK(seconds(d.svc.next_deadline()) == doctest::Approx(3.5));
    d.svc.on_time(at(3.4), d.out);
    CHECK(d.take() == "");
    d.svc.on_time(at(3.5), d.out);
    CHECK(d.take() == "probe 0 r1 health");
}

TEST_CASE("liveness: a success resets the failure streak, so alternating results never kill") {
    Driver d(probed(2));
    d.start(at(0));
    d.out.clear();
    Actions all;
    // failure, success, failure, success, ... each an interval after the last result.
    for (int k = 1; k <= 12; ++k) {
        probe_at(d, k, k % 2 == 0);
        all.insert(all.end(), d.out.begin(), d.out.end());
        d.out.clear();
        CHECK(d.svc.health_failures() == (k % 2 == 0 ? 0 : 1));
        CHECK(d.svc.state() == State::running);
    }
    CHECK(only<SignalAction>(all).empty());
    CHECK(events_of(all, EventType::liveness_kill).empty());
    CHECK(d.svc.liveness_kills() == 0);
    CHECK(d.svc.has_process());
    // One health event per change: unhealthy, healthy, ... twelve changes.
    std::vector<std::string> expected;
    for (int k = 1; k <= 12; ++k) {
        expected.push_back(k % 2 == 0 ? "healthy" : "unhealthy");
    }
    CHECK(health_words(all) == expected);

    // Two failures in a row do kill: the threshold itself works.
    probe_at(d, 13, false);
    CHECK(d.take() == "health svc r1");
    probe_at(d, 14, false);
    CHECK(d.take() == "liveness_kill svc r1 | signal 0 r1 pid 100 TERM group +cont");
    CHECK(d.svc.liveness_kills() == 1);
}

TEST_CASE("liveness: `failures` failures in a row kill, after a streak broken by a success") {
    Driver d(probed(2));
    d.start(at(0));
    d.out.clear();
    probe_at(d, 1, false);
    CHECK(d.take() == "health svc r1");
    probe_at(d, 2, true);
    CHECK(d.take() == "health svc r1");
    probe_at(d, 3, false);
    CHECK(d.take() == "health svc r1");
    CHECK(d.svc.state() == State::running);
    probe_at(d, 4, false);
    CHECK(d.take() == "liveness_kill svc r1 | signal 0 r1 pid 100 TERM group +cont");
    CHECK(d.svc.liveness_kills() == 1);
    CHECK(d.svc.state() == State::stopping);
}

TEST_CASE("health events: one per change of status, none while the status stays the same") {
    Driver d(probed(10));
    d.start(at(0));
    d.out.clear();
    Actions all;
    auto probe = [&](double t, bool ok) {
        probe_at(d, t, ok);
        all.insert(all.end(), d.out.begin(), d.out.end());
        d.out.clear();
    };
    for (int k = 1; k <= 4; ++k) {
        probe(k, true);
    }
    CHECK(health_words(all) == std::vector<std::string>{"healthy"});
    for (int k = 5; k <= 12; ++k) {
        probe(k, false);
    }
    CHECK(d.svc.health_failures() == 8);
    CHECK(health_words(all) == std::vector<std::string>{"healthy", "unhealthy"});
    for (int k = 13; k <= 16; ++k) {
        probe(k, true);
    }
    CHECK(health_words(all) == std::vector<std::string>{"healthy", "unhealthy", "healthy"});
    for (const Event& e : events_of(all, EventType::health)) {
        CHECK(e.run == 1);
        CHECK(e.service == "svc");
    }
    CHECK(events_of(all, EventType::liveness_kill).empty());
}

TEST_CASE("liveness kill of a run that ignores SIGTERM: SIGKILL after stop.timeout") {
    Driver d(probed(1));  // stop.timeout 3 s
    d.start(at(0));
    d.out.clear();
    probe_at(d, 1, false);
    CHECK(d.take() ==
          "health svc r1 | liveness_kill svc r1 | signal 0 r1 pid 100 TERM group +cont");
    CHECK(d.svc.state() == State::stopping);
    CHECK(seconds(d.svc.next_deadline()) == doctest::Approx(4.0));

    // The run ignores SIGTERM: no further probe, no SIGKILL before the stop timeout.
    for (double t : {1.5, 2.0, 3.0, 3.999}) {
        d.svc.on_time(at(t), d.out);
        CHECK_MESSAGE(d.take() == "", "at " << t);
    }
    d.svc.on_time(at(4.0), d.out);
    CHECK(d.take() == "signal 0 r1 pid 100 KILL group");
    // Sent once: the escalation does not repeat.
    d.svc.on_time(at(5.0), d.out);
    CHECK(d.take() == "");

    d.exit(at(4.01), killed(SIGKILL));
    std::vector<Event> exits = events_of(d.out, EventType::exited);
    REQUIRE(exits.size() == 1);
    REQUIRE(exits[0].exit.has_value());
    CHECK(exits[0].exit->signal == SIGKILL);
    CHECK(exits[0].exit->killed_by == KilledBy::liveness);
    CHECK(events_of(d.out, EventType::restarting).size() == 1);
    d.out.clear();
    CHECK(d.svc.liveness_kills() == 1);
    CHECK(d.svc.state() == State::backoff);
    REQUIRE(d.svc.last_exit().has_value());
    CHECK(d.svc.last_exit()->killed_by == KilledBy::liveness);
}

TEST_CASE("liveness kill with stop.mode process: SIGTERM then SIGKILL to the main PID only") {
    config::ServiceSpec s = probed(2);
    s.stop.mode = config::StopMode::process;
    s.stop.timeout = 500ms;
    Driver d(s);
    d.start(at(0));
    d.out.clear();
    probe_at(d, 1, false);
    d.out.clear();
    probe_at(d, 2, false);
    CHECK(d.take() == "liveness_kill svc r1 | signal 0 r1 pid 100 TERM process +cont");
    d.svc.on_time(at(2.499), d.out);
    CHECK(d.take() == "");
    d.svc.on_time(at(2.5), d.out);
    CHECK(d.take() == "signal 0 r1 pid 100 KILL process");
}

}  // namespace
}  // namespace pkit::core
