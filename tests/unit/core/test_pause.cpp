// pause and resume (SPEC §15) in the core: a paused run's deadlines and probes are held
// until the resume, which gives the deadlines what was left of them and the probes a
// fresh period; whatever ends a paused run thaws its cgroup first.

#include <doctest/doctest.h>

#include "daemon/core/explain.hpp"
#include "daemon/core/readiness.hpp"
#include "tests/unit/core/fake.hpp"

namespace pkit::core {
namespace {

using namespace test;
using namespace std::chrono_literals;

bool has(const std::string& trace_text, const std::string& part) {
    return trace_text.find(part) != std::string::npos;
}

// A service with a run timeout of 10 s and a liveness probe every 1 s.
config::ServiceSpec probed() {
    config::ServiceSpec s = spec("web");
    s.timeout = 10s;
    s.health.edit().kind = config::ProbeKind::exec;
    s.health.edit().argv = {"/bin/true"};
    s.health.edit().interval = 1s;
    s.health.edit().failures = 1;
    return s;
}

TEST_CASE("pause: a running service freezes, and no deadline or probe fires until resume") {
    Driver d(probed());
    d.start(at(0));
    d.take();
    REQUIRE(seconds(d.svc.next_deadline()) == 1.0);  // the first liveness probe
    REQUIRE(d.svc.can_pause());

    d.svc.pause(at(2), d.out);
    CHECK(d.take() == "freeze 0 r1 | paused web r1");
    CHECK(d.svc.state() == State::paused);
    CHECK(d.svc.paused());
    CHECK(d.svc.pid() == 100);
    CHECK_FALSE(d.svc.next_deadline().has_value());
    // Long past the run timeout: nothing fires, and a probe that was in flight at the
    // pause and answers now is ignored.
    d.svc.on_time(at(500), d.out);
    d.svc.on_probe_result(1, ProbePurpose::health, false, at(500), d.out);
    CHECK(d.take() == "");
    CHECK(d.svc.state() == State::paused);
    CHECK(d.svc.health_failures() == 0);

    d.svc.resume(at(600), d.out);
    const std::string resumed = d.take();
    CHECK(has(resumed, "thaw 0 r1 | resumed web r1 (after "));
    CHECK(d.svc.state() == State::running);
    // The probe an interval after the resume; the run timeout with the 8 s it had left.
    CHECK(seconds(d.svc.next_deadline()) == 601.0);
    d.svc.on_time(at(601), d.out);
    CHECK(d.take() == "probe 0 r1 health");
    d.svc.on_probe_result(1, ProbePurpose::health, true, at(601.5), d.out);
    d.take();
    d.svc.on_time(at(607.9), d.out);
    CHECK_FALSE(has(d.take(), "signal"));
    d.svc.on_time(at(608), d.out);
    CHECK(has(d.take(), "signal 0 r1 pid 100 TERM"));
    CHECK(d.svc.state() == State::stopping);
}

TEST_CASE(
    "pause: a starting run keeps what was left of its ready timeout, its probe starts afresh") {
    config::ServiceSpec s = spec("db");
    s.ready.edit().timeout = 5s;
    s.ready.edit().probe.kind = config::ProbeKind::exec;
    s.ready.edit().probe.argv = {"/bin/true"};
    s.ready.edit().probe.interval = 1s;
    Driver d(s);
    d.start(at(0));
    d.take();
    REQUIRE(d.svc.state() == State::starting);
    d.svc.pause(at(3), d.out);
    CHECK(d.take() == "freeze 0 r1 | paused db r1");
    REQUIRE(d.svc.pause_record() != nullptr);
    CHECK(d.svc.pause_record()->starting);
    CHECK(d.svc.pause_record()->ready_timeout_left == Duration(2s));
    d.svc.on_time(at(60), d.out);
    CHECK(d.take() == "");

    d.svc.resume(at(100), d.out);
    d.take();
    CHECK(d.svc.state() == State::starting);
    CHECK(seconds(d.svc.next_deadline()) == 101.0);  // the ready probe
    d.svc.on_time(at(101), d.out);
    CHECK(d.take() == "probe 0 r1 ready");
    d.svc.on_probe_result(1, ProbePurpose::ready, false, at(101.5), d.out);
    d.svc.on_time(at(102), d.out);  // 2 s after the resume: the ready timeout
    CHECK(has(d.take(), "signal 0 r1 pid 100 TERM"));
    CHECK(d.svc.state() == State::stopping);
}

TEST_CASE("pause: READY=1 read while paused makes the run ready; it resumes running") {
    config::ServiceSpec s = spec("db");
    s.ready.edit().notify = true;
    s.ready.edit().timeout = 5s;
    Driver d(s);
    d.start(at(0));
    d.svc.pause(at(1), d.out);
    d.take();
    NotifyMessage ready;
    ready.ready = true;
    ready.status = "serving";
    d.svc.on_notify(1, ready, at(2), d.out);
    CHECK(d.take() == "ready db r1");
    CHECK(d.svc.state() == State::paused);
    CHECK(d.svc.ready());
    CHECK(d.svc.notify_status() == "serving");
    CHECK_FALSE(d.svc.next_deadline().has_value());
    d.svc.resume(at(3), d.out);
    d.take();
    CHECK(d.svc.state() == State::running);
    CHECK_FALSE(d.svc.next_deadline().has_value());  // no ready timeout any more
}

TEST_CASE("pause: a stop of a paused run thaws it first, then sends its stop signal") {
    Driver d(probed());
    d.start(at(0));
    d.svc.pause(at(1), d.out);
    d.take();
    d.svc.stop(at(2), d.out, AfterStop::stay_stopped, std::nullopt);
    const std::string stop = d.take();
    CHECK(stop.starts_with("thaw 0 r1 | signal 0 r1 pid 100 TERM"));
    CHECK(d.svc.state() == State::stopping);
    CHECK(d.svc.pause_record() == nullptr);
    CHECK(seconds(d.svc.next_deadline()) == 2.0 + 5.0);  // the stop timeout's SIGKILL
    d.exit(at(3), killed(SIGTERM));
    CHECK(d.svc.state() == State::stopped);
    CHECK(d.svc.last_exit()->killed_by == KilledBy::operator_);
}

TEST_CASE("pause: a paused run killed from outside is thawed and judged as any exit") {
    Driver d(probed());
    d.start(at(0));
    d.svc.pause(at(1), d.out);
    d.take();
    d.exit(at(2), killed(SIGKILL));
    const std::string exit = d.take();
    CHECK(exit.starts_with("thaw 0 r1 | exited web r1"));
    CHECK(has(exit, "restarting web r1"));
    CHECK(d.svc.state() == State::backoff);
    CHECK(d.svc.crashes_counted() == 1);
    CHECK(d.svc.pause_record() == nullptr);
    // The next run is not paused.
    d.after_backoff(at(10));
    CHECK(d.svc.state() == State::running);
}

TEST_CASE("pause: the shutdown deadline's SIGKILL of a paused run thaws its cgroup too") {
    Driver d(probed());
    d.start(at(0));
    d.svc.pause(at(1), d.out);
    d.take();
    d.svc.kill_now(d.out);
    CHECK(d.take() == "thaw 0 r1 | signal 0 r1 pid 100 KILL group");
    CHECK(d.svc.state() == State::stopping);
}

TEST_CASE("pause: pausing twice and resuming what is not paused change nothing") {
    Driver d(probed());
    d.start(at(0));
    d.take();
    d.svc.resume(at(1), d.out);
    CHECK(d.take() == "");
    CHECK(d.svc.state() == State::running);
    d.svc.pause(at(1), d.out);
    d.take();
    d.svc.pause(at(2), d.out);
    CHECK(d.take() == "");
    CHECK(d.svc.pause_record()->since == mono(1));
}

TEST_CASE("pause: only a run that exists can be paused") {
    Driver d(probed());
    CHECK_FALSE(d.svc.can_pause());  // stopped, never run
    d.svc.want_up(at(0), d.out, true);
    CHECK_FALSE(d.svc.can_pause());  // waiting
    d.svc.launch(at(0), d.out);
    CHECK_FALSE(d.svc.can_pause());  // launched, its pid not known yet
    d.svc.pause(at(0), d.out);
    CHECK(d.svc.state() == State::starting);
    d.svc.on_spawned(1, 100, at(0), d.out);
    CHECK(d.svc.can_pause());
    d.exit(at(1), exited(1));
    CHECK(d.svc.state() == State::backoff);
    CHECK_FALSE(d.svc.can_pause());
    d.take();
    d.svc.pause(at(1), d.out);
    CHECK(d.take() == "");
}

TEST_CASE("pause: the watchdog starts a fresh period at the resume") {
    config::ServiceSpec s = spec("wd");
    s.health.edit().kind = config::ProbeKind::watchdog;
    s.health.edit().watchdog = 3s;
    s.health.edit().failures = 1;
    Driver d(s);
    d.start(at(0));
    d.svc.pause(at(2), d.out);
    d.svc.resume(at(50), d.out);
    d.take();
    CHECK(seconds(d.svc.next_deadline()) == 53.0);
    CHECK(d.svc.health_failures() == 0);
}

TEST_CASE("pause: the Supervisor's shutdown stops a paused service, thawed first") {
    Supervisor sup = supervisor({probed()});
    sup.start(at(0));
    sup.on_spawned(0, 1, 100, at(0));
    sup.take_actions();
    sup.pause_service(0, at(1));
    CHECK(take(sup) == "freeze 0 r1 | paused web r1");
    CHECK_FALSE(sup.next_deadline().has_value());
    // Not ready while frozen, and said so.
    Readiness r = readiness(sup, at(2));
    CHECK_FALSE(r.ready);
    REQUIRE(r.not_ready.size() == 1);
    CHECK(r.not_ready[0].state == State::paused);
    CHECK(has(r.not_ready[0].reason, "paused by the operator since 00:16:41 UTC (1s ago)"));
    // explain says so too, and what the resume re-arms.
    Explanation e = explain(sup, 0, at(2));
    CHECK(has(e.text, "paused by the operator since"));
    CHECK(has(e.text, "`pkitctl resume web`"));
    CHECK(has(e.text, "the run timeout 9s"));

    sup.shutdown(at(3));
    const std::string down = take(sup);
    CHECK(down.starts_with("thaw 0 r1 | signal 0 r1 pid 100 TERM"));
    sup.pause_service(0, at(3.5));  // shutting down: nothing
    CHECK(take(sup) == "");
    CHECK(sup.on_exit(100, killed(SIGTERM), at(4)));
    CHECK(has(take(sup), "exit 0"));
}

}  // namespace
}  // namespace pkit::core
