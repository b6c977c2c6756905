// start_first replacements (SPEC §14): an operator restart or a reload of a ready run
// launches the new run beside the old one, stops the old one once the new one is
// ready, and keeps the old one when the new one fails.

#include <doctest/doctest.h>

#include "daemon/core/supervisor.hpp"
#include "tests/unit/core/fake.hpp"

namespace pkit::core {
namespace {

using namespace test;

config::ServiceSpec start_first(std::string name = "web") {
    config::ServiceSpec s = spec(std::move(name));
    s.restart.order = config::RestartOrder::start_first;
    return s;
}

config::ServiceSpec with_ready_probe(config::ServiceSpec s) {
    config::ReadySpec ready;
    ready.probe.kind = config::ProbeKind::tcp;
    ready.probe.target = "127.0.0.1:80";
    ready.probe.interval = 200ms;
    ready.timeout = 5s;
    s.ready = ready;
    return s;
}

// "web" running and ready, run 1 with pid 100, actions taken.
Supervisor running(config::ServiceSpec s) {
    Supervisor sup = supervisor({std::move(s)});
    sup.start(at(0));
    sup.on_spawned(0, 1, 100, at(0));
    if (sup.service(0).spec().ready->enabled()) {
        sup.on_probe_result(0, 1, ProbePurpose::ready, true, at(0.2));
    }
    sup.take_actions();
    return sup;
}

TEST_CASE("a run's pid may be signalled until its exit is reported, a draining run's too") {
    // The shell sends a signal it had to put off only while this holds: a reaped pid
    // may belong to another process by then.
    Supervisor sup = running(with_ready_probe(start_first()));
    const Service& web = sup.service(0);
    CHECK(web.signallable(1, 100));
    CHECK_FALSE(web.signallable(2, 100));  // another run's number
    CHECK_FALSE(web.signallable(1, 101));  // another pid
    CHECK_FALSE(web.signallable(1, 0));
    sup.restart_service(0, at(10));
    sup.on_spawned(0, 2, 200, at(10.1));
    sup.take_actions();
    CHECK(web.pid_of(1) == 100);  // draining
    CHECK(web.pid_of(2) == 200);
    CHECK(web.signallable(1, 100));
    CHECK(web.signallable(2, 200));
    CHECK(sup.on_exit(100, killed(SIGKILL), at(10.2)));
    CHECK(web.pid_of(1) == 0);
    CHECK_FALSE(web.signallable(1, 100));
    CHECK(web.signallable(2, 200));
    CHECK(sup.on_exit(200, killed(SIGKILL), at(10.3)));
    CHECK_FALSE(web.signallable(2, 200));
}

TEST_CASE("start_first: the old run is stopped only once the new run is ready") {
    Supervisor sup = running(with_ready_probe(start_first()));
    sup.restart_service(0, at(10));
    CHECK(take(sup) == "spawn 0 r2");  // no signal to run 1
    const Service& web = sup.service(0);
    CHECK(web.state() == State::starting);
    CHECK(web.draining_pid() == 100);
    CHECK(web.has_process());
    sup.on_spawned(0, 2, 200, at(10.1));
    CHECK(take(sup) == "started web r2 pid 200");
    CHECK(web.pid() == 200);
    sup.on_time(at(10.3));
    CHECK(take(sup) == "probe 0 r2 ready");
    sup.on_probe_result(0, 2, ProbePurpose::ready, true, at(10.4));
    CHECK(take(sup) == "ready web r2 (stopping run 1) | signal 0 r1 pid 100 TERM group +cont");
    CHECK(web.replacement()->done);
    CHECK_FALSE(web.replacement()->failure);
    CHECK(web.state() == State::running);
    CHECK(web.draining_pid() == 100);  // until it has exited
    // The old run's SIGKILL deadline is its own.
    CHECK(seconds(sup.next_deadline()) == 15.4);
    sup.on_time(at(15.4));
    CHECK(take(sup) == "signal 0 r1 pid 100 KILL group");
    CHECK(sup.on_exit(100, killed(SIGKILL), at(15.5)));
    CHECK(take(sup) ==
          "exited web r1 signal KILL by operator | cleanup 0 pgid 100 TERM grace 5000ms");
    CHECK(web.draining_pid() == 0);
    CHECK(web.state() == State::running);
    CHECK(web.pid() == 200);
    CHECK(web.run() == 2);
    CHECK(web.restarts() == 0);  // an operator restart is not counted
}

TEST_CASE("start_first without [ready]: the new run is ready once exec'd") {
    Supervisor sup = running(start_first());
    sup.restart_service(0, at(1));
    CHECK(take(sup) == "spawn 0 r2");
    sup.on_spawned(0, 2, 200, at(1.1));
    CHECK(take(sup) ==
          "started web r2 pid 200 | ready web r2 (stopping run 1) | "
          "signal 0 r1 pid 100 TERM group +cont");
    sup.on_exit(100, killed(SIGTERM), at(1.2));
    CHECK(take(sup) ==
          "exited web r1 signal TERM by operator | cleanup 0 pgid 100 TERM grace 5000ms");
}

TEST_CASE("start_first: a new run that exits before it is ready leaves the old one running") {
    Supervisor sup = running(with_ready_probe(start_first()));
    sup.restart_service(0, at(10));
    sup.on_spawned(0, 2, 200, at(10.1));
    sup.take_actions();
    CHECK(sup.on_exit(200, exited(3), at(10.5)));
    CHECK(take(sup) ==
          "exited web r2 code 3 (run 1 keeps running) | cleanup 0 pgid 200 TERM grace 5000ms");
    const Service& web = sup.service(0);
    CHECK(web.state() == State::running);
    CHECK(web.ready());
    CHECK(web.pid() == 100);
    CHECK(web.run() == 1);
    CHECK(web.draining_pid() == 0);
    CHECK(web.restarts() == 0);  // never judged: no crash, no backoff
    CHECK(web.replacement()->done);
    CHECK(web.replacement()->failure == "run 2 exited with code 3");
    // Run numbers are never reused: the next restart launches run 3.
    sup.restart_service(0, at(11));
    CHECK(take(sup) == "spawn 0 r3");
    // The old run's exit is still its own.
    sup.on_spawned(0, 3, 300, at(11.1));
    sup.take_actions();
    sup.on_probe_result(0, 3, ProbePurpose::ready, true, at(11.2));
    CHECK(take(sup) == "ready web r3 (stopping run 1) | signal 0 r1 pid 100 TERM group +cont");
}

TEST_CASE("start_first: a new run not ready in time is stopped and the old one kept") {
    Supervisor sup = running(with_ready_probe(start_first()));
    sup.restart_service(0, at(10));
    sup.on_spawned(0, 2, 200, at(10));
    sup.take_actions();
    sup.on_time(at(15));  // [ready] timeout 5 s
    CHECK(take(sup) == "signal 0 r2 pid 200 TERM group +cont");
    CHECK(sup.service(0).draining_pid() == 100);
    sup.on_time(at(20));  // the new run's SIGKILL escalation spares the old run
    CHECK(take(sup) == "signal 0 r2 pid 200 KILL group");
    sup.on_exit(200, killed(SIGKILL), at(20.1));
    CHECK(take(sup) ==
          "exited web r2 signal KILL by ready_timeout (run 1 keeps running) | "
          "cleanup 0 pgid 200 TERM grace 5000ms");
    const Service& web = sup.service(0);
    CHECK(web.pid() == 100);
    CHECK(web.state() == State::running);
    CHECK(web.replacement()->failure == "run 2 was not ready within its [ready] timeout");
}

TEST_CASE("start_first: a new run that fails to launch leaves the old one running") {
    Supervisor sup = running(start_first());
    sup.restart_service(0, at(1));
    sup.take_actions();
    sup.on_launch_failed(0, 2, LaunchFailure{config::LaunchError::not_found, "not_found: x"},
                         at(1.1));
    CHECK(take(sup) == "exited web r2 launch_error not_found");
    CHECK(sup.service(0).pid() == 100);
    CHECK(sup.service(0).replacement()->failure == "run 2 failed to launch: not_found: x");
}

TEST_CASE("start_first: an operator stop during the overlap stops both runs") {
    Supervisor sup = running(with_ready_probe(start_first()));
    sup.restart_service(0, at(1));
    sup.on_spawned(0, 2, 200, at(1.1));
    sup.take_actions();
    sup.stop_service(0, at(2));
    CHECK(take(sup) ==
          "signal 0 r1 pid 100 TERM group +cont | signal 0 r2 pid 200 TERM group +cont");
    sup.on_exit(200, killed(SIGTERM), at(2.1));
    CHECK(sup.service(0).has_process());
    sup.on_exit(100, killed(SIGTERM), at(2.2));
    take(sup);
    CHECK_FALSE(sup.service(0).has_process());
    CHECK(sup.service(0).state() == State::stopped);
    CHECK(sup.service(0).replacement()->failure == "stopped before the new run was ready");
}

TEST_CASE("start_first: the shutdown waits for the draining run too") {
    Supervisor sup = running(start_first());
    sup.restart_service(0, at(1));
    sup.on_spawned(0, 2, 200, at(1.1));
    sup.take_actions();  // run 1 got its stop signal
    sup.shutdown(at(2));
    take(sup);
    sup.on_exit(200, killed(SIGTERM), at(2.1));
    CHECK(take(sup).find("exit 0") == std::string::npos);  // run 1 is still there
    sup.on_exit(100, killed(SIGTERM), at(2.2));
    CHECK(take(sup).find("exit 0") != std::string::npos);
}

TEST_CASE("start_first: a reload that changes the service replaces it the same way") {
    Supervisor sup = running(start_first());
    config::ServiceSpec changed = start_first();
    changed.command = {"/bin/changed"};
    ReloadOutcome outcome = sup.reload(tree({changed}), at(5));
    CHECK(outcome.changed == std::vector<std::string>{"web"});
    CHECK(take(sup) == "reload  r0 | spawn 0 r2");
    CHECK(sup.service(0).spec().command == changed.command);
    CHECK(sup.service(0).draining_pid() == 100);
}

TEST_CASE("stop_first (the default) and a oneshot stop first as before") {
    Supervisor sup = running(spec("web"));
    sup.restart_service(0, at(1));
    CHECK(take(sup) == "signal 0 r1 pid 100 TERM group +cont");
    CHECK_FALSE(sup.service(0).replacement());
}

}  // namespace
}  // namespace pkit::core

namespace pkit::core {
namespace {

using namespace test;

TEST_CASE("start_first: a restart while the old run still drains replaces the new run too") {
    config::ServiceSpec s = spec("web");
    s.restart.order = config::RestartOrder::start_first;
    Supervisor sup = supervisor({s});
    sup.start(at(0));
    sup.on_spawned(0, 1, 100, at(0));
    sup.take_actions();
    sup.restart_service(0, at(1));
    sup.on_spawned(0, 2, 200, at(1.1));
    CHECK(take(sup) ==
          "spawn 0 r2 | started web r2 pid 200 | ready web r2 (stopping run 1) | "
          "signal 0 r1 pid 100 TERM group +cont");
    sup.restart_service(0, at(2));  // run 1 has not exited yet
    sup.on_spawned(0, 3, 300, at(2.1));
    CHECK(take(sup) ==
          "spawn 0 r3 | started web r3 pid 300 | ready web r3 (stopping run 2) | "
          "signal 0 r2 pid 200 TERM group +cont");
    CHECK(sup.service(0).draining_pid() == 200);
    CHECK(seconds(sup.next_deadline()) == 6.1);  // run 1's SIGKILL
    sup.on_time(at(6.1));
    CHECK(take(sup) == "signal 0 r1 pid 100 KILL group");
    sup.on_exit(100, killed(SIGKILL), at(6.2));
    sup.on_exit(200, killed(SIGTERM), at(6.3));
    take(sup);
    CHECK(sup.service(0).draining_pid() == 0);
    CHECK(sup.service(0).pid() == 300);
    CHECK(sup.service(0).state() == State::running);
}

}  // namespace
}  // namespace pkit::core
