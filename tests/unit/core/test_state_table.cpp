// The plain grid of daemon/core/service_table.hpp, input by input: each case brings
// one Service to a phase, feeds it one input and checks the state it moves to, the
// actions it emits and the Outcome it returns.

#include <doctest/doctest.h>

#include <functional>

#include "daemon/core/service.hpp"
#include "tests/unit/core/fake.hpp"

namespace pkit::core {
namespace {

using namespace test;
using namespace std::chrono_literals;

std::string describe(const Outcome& o) {
    std::string text;
    auto add = [&](const std::string& part) { text += (text.empty() ? "" : " ") + part; };
    if (o.crashed) {
        add("crashed");
    }
    if (o.restart) {
        add("restart in " + ms_text(*o.restart));
    }
    if (o.ended) {
        add("ended " + std::string(to_string(o.ended->state)) + " (" +
            std::string(to_string(o.ended->reason)) + ")");
    }
    return text;
}

// The phases a row starts from, reached through inputs only (times in seconds).
enum class From {
    stopped,
    waiting,
    restart_due,
    launching,  // starting, pid not yet reported
    cancelled,  // launching, then stopped
    starting,   // spawned, waiting for READY=1 (ready.notify)
    running,
    stopping,
    backoff,
    storm_pause,
    storm_hold,
    done,
    failed
};

config::ServiceSpec spec_for(From from) {
    config::ServiceSpec s = spec("web");
    s.stop_when.edit().exit_codes = {0};  // exit 0: done
    if (from == From::starting) {
        s.ready.edit().notify = true;
        s.ready.edit().timeout = 10s;
    }
    if (from == From::storm_pause) {
        s.storm.edit().pause = 30s;
        s.storm.edit().threshold = 1.0;
    }
    if (from == From::failed) {
        s.restart.max_restarts = 0;
    }
    return s;
}

void bring(Driver& d, From from) {
    switch (from) {
        case From::stopped:
            break;
        case From::waiting:
            d.svc.want_up(at(0), d.out, true);
            break;
        case From::launching:
            d.svc.want_up(at(0), d.out, true);
            d.svc.launch(at(0), d.out);
            break;
        case From::cancelled:
            d.svc.want_up(at(0), d.out, true);
            d.svc.launch(at(0), d.out);
            d.svc.stop(at(0.5), d.out, AfterStop::stay_stopped, std::nullopt);
            break;
        case From::starting:
        case From::running:
            d.start(at(0));
            break;
        case From::stopping:
            d.start(at(0));
            d.svc.stop(at(0.5), d.out, AfterStop::stay_stopped, std::nullopt);
            break;
        case From::backoff:
        case From::storm_pause:
        case From::failed:
            d.start(at(0));
            d.exit(at(1), exited(1));
            break;
        case From::restart_due:
            d.start(at(0));
            d.exit(at(1), exited(1));
            d.svc.on_time(at(1.2), d.out);
            break;
        case From::storm_hold:
            d.start(at(0));
            d.exit(at(1), exited(1));
            d.svc.hold_until(at(50).mono);
            break;
        case From::done:
            d.start(at(0));
            d.exit(at(1), exited(0));
            break;
    }
    d.out.clear();
}

struct Row {
    const char* name;
    From from;
    std::function<Outcome(Driver&)> input;
    State state;
    const char* actions;
    const char* outcome;
};

Outcome none(const std::function<void(Driver&)>& f, Driver& d) {
    f(d);
    return {};
}

void check_rows(const std::vector<Row>& rows) {
    for (const Row& row : rows) {
        CAPTURE(row.name);
        Driver d(spec_for(row.from));
        bring(d, row.from);
        Outcome outcome = row.input(d);
        CHECK(to_string(d.svc.state()) == to_string(row.state));
        CHECK(d.take() == row.actions);
        CHECK(describe(outcome) == row.outcome);
    }
}

const auto want_up = [](Driver& d) {
    return none([](Driver& x) { x.svc.want_up(at(2), x.out, true); }, d);
};
const auto launch = [](Driver& d) {
    return none([](Driver& x) { x.svc.launch(at(2), x.out); }, d);
};
const auto spawned = [](Driver& d) {
    return none([](Driver& x) { x.svc.on_spawned(x.svc.run(), 200, at(2), x.out); }, d);
};
const auto launch_failed = [](Driver& d) {
    return d.svc.on_launch_failed(d.svc.run(),
                                  LaunchFailure{config::LaunchError::not_found, "not_found: x"},
                                  at(2), d.out, 0.5);
};
const auto exit_1 = [](Driver& d) {
    return d.svc.on_exit(d.svc.run(), exited(1), at(2), d.out, 0.5);
};
const auto exit_0 = [](Driver& d) {
    return d.svc.on_exit(d.svc.run(), exited(0), at(2), d.out, 0.5);
};
const auto stop = [](Driver& d) {
    return none([](Driver& x) { x.svc.stop(at(2), x.out, AfterStop::stay_stopped, std::nullopt); },
                d);
};
const auto restart = [](Driver& d) {
    return none([](Driver& x) { x.svc.stop(at(2), x.out, AfterStop::relaunch, std::nullopt); }, d);
};

TEST_CASE("state table: want_up, launch, spawned and launch failed rows") {
    check_rows({
        {"want_up stopped", From::stopped, want_up, State::waiting, "", ""},
        {"want_up done", From::done, want_up, State::waiting, "", ""},
        {"want_up failed", From::failed, want_up, State::waiting, "", ""},
        {"want_up backoff", From::backoff, want_up, State::waiting, "", ""},
        {"want_up storm_pause", From::storm_pause, want_up, State::waiting, "", ""},
        {"want_up storm_hold", From::storm_hold, want_up, State::waiting, "", ""},
        {"want_up running", From::running, want_up, State::running, "", ""},
        {"launch waiting", From::waiting, launch, State::starting, "spawn 0 r1", ""},
        {"launch restart_due", From::restart_due, launch, State::starting, "spawn 0 r2", ""},
        {"launch running", From::running, launch, State::running, "", ""},
        {"spawned", From::launching, spawned, State::running, "started web r1 pid 200", ""},
        {"spawned, stop pending", From::cancelled, spawned, State::stopping,
         "started web r1 pid 200 | signal 0 r1 pid 200 TERM group +cont", ""},
        {"spawned twice", From::running, spawned, State::running, "", ""},
        {"launch failed", From::launching, launch_failed, State::backoff,
         "exited web r1 launch_error not_found | restarting web r1 in 200ms #1",
         "crashed restart in 200ms"},
        {"launch failed, stop pending", From::cancelled, launch_failed, State::stopped,
         "exited web r1 launch_error not_found | stopped web r1", "ended stopped (operator)"},
    });
}

TEST_CASE("state table: exit rows") {
    check_rows({
        {"exit 1 running", From::running, exit_1, State::backoff,
         "exited web r1 code 1 | cleanup 0 pgid 100 TERM grace 5000ms | "
         "restarting web r1 in 200ms #1",
         "crashed restart in 200ms"},
        {"exit 0 running", From::running, exit_0, State::done,
         "exited web r1 code 0 | cleanup 0 pgid 100 TERM grace 5000ms | stopped web r1",
         "ended done (predicate)"},
        {"exit 1 starting", From::starting, exit_1, State::backoff,
         "exited web r1 code 1 | cleanup 0 pgid 100 TERM grace 5000ms | "
         "restarting web r1 in 200ms #1",
         "crashed restart in 200ms"},
        {"exit stopping (operator)", From::stopping, exit_1, State::stopped,
         "exited web r1 code 1 by operator | cleanup 0 pgid 100 TERM grace 5000ms | "
         "stopped web r1",
         "ended stopped (operator)"},
        {"exit of no run", From::backoff, exit_1, State::backoff, "", ""},
    });
    SUBCASE("exit with restarts exhausted") {
        Driver d(spec_for(From::failed));
        d.start(at(0));
        d.out.clear();
        Outcome o = d.svc.on_exit(d.svc.run(), exited(1), at(2), d.out, 0.5);
        CHECK(d.svc.state() == State::failed);
        CHECK(describe(o) == "crashed ended failed (restarts_exhausted)");
    }
    SUBCASE("exit during a storm trip") {
        Driver d(spec_for(From::storm_pause));
        d.start(at(0));
        d.out.clear();
        Outcome o = d.svc.on_exit(d.svc.run(), exited(1), at(2), d.out, 0.5);
        CHECK(d.svc.state() == State::storm_pause);
        CHECK(describe(o) == "crashed restart in 30000ms");
    }
    SUBCASE("exit with a zero delay: waiting at once, still a pending restart") {
        config::ServiceSpec s = spec("web");
        s.restart.backoff_initial = 0s;
        Driver d(s);
        d.start(at(0));
        Outcome o = d.svc.on_exit(d.svc.run(), exited(1), at(2), d.out, 0.5);
        CHECK(d.svc.state() == State::waiting);
        CHECK(d.svc.restart_pending());
        CHECK(describe(o) == "crashed restart in 0ms");
    }
    SUBCASE("exit while shutting down: no gates, stopped") {
        Driver d(spec("web"));
        d.start(at(0));
        d.svc.forbid_restarts();
        d.out.clear();
        Outcome o = d.svc.on_exit(d.svc.run(), exited(1), at(2), d.out, 0.5, at(3).mono);
        CHECK(d.svc.state() == State::stopped);
        CHECK(d.take() ==
              "exited web r1 code 1 | cleanup 0 pgid 100 TERM grace 1000ms | stopped web r1");
        CHECK(describe(o) == "ended stopped (operator)");
    }
}

TEST_CASE("state table: probe and notify rows") {
    config::ServiceSpec probed = spec("web");
    probed.ready.edit().probe.kind = config::ProbeKind::exec;
    probed.ready.edit().probe.argv = {"/bin/true"};
    probed.ready.edit().probe.interval = 1s;
    probed.health.edit().kind = config::ProbeKind::exec;
    probed.health.edit().argv = {"/bin/true"};
    probed.health.edit().interval = 1s;
    probed.health.edit().failures = 1;
    Driver d(probed);
    d.start(at(0));
    CHECK(d.svc.state() == State::starting);
    d.out.clear();
    d.svc.on_probe_result(1, ProbePurpose::ready, false, at(1), d.out);
    CHECK(d.svc.state() == State::starting);
    d.svc.on_probe_result(1, ProbePurpose::ready, true, at(2), d.out);
    CHECK(d.svc.state() == State::running);
    CHECK(d.svc.ready());
    CHECK(d.take() == "ready web r1");
    d.svc.on_probe_result(1, ProbePurpose::health, false, at(3), d.out);
    CHECK(d.svc.state() == State::stopping);
    CHECK(d.take() ==
          "health web r1 | liveness_kill web r1 | signal 0 r1 pid 100 TERM group +cont");

    Driver n(spec_for(From::starting));
    bring(n, From::starting);
    NotifyMessage extend;
    extend.extend_timeout_usec = 20'000'000;
    n.svc.on_notify(1, extend, at(5), n.out);
    CHECK(seconds(n.svc.next_deadline()) == doctest::Approx(25.0));
    NotifyMessage ready;
    ready.ready = true;
    n.svc.on_notify(1, ready, at(6), n.out);
    CHECK(n.svc.state() == State::running);
    CHECK(n.svc.ready());
    CHECK(n.take() == "ready web r1");
}

TEST_CASE("state table: deadline rows, dispatched by phase") {
    SUBCASE("starting: the ready timeout stops the run") {
        Driver d(spec_for(From::starting));
        bring(d, From::starting);
        d.svc.on_time(at(10), d.out);
        CHECK(d.svc.state() == State::stopping);
        CHECK(d.take() == "signal 0 r1 pid 100 TERM group +cont");
    }
    SUBCASE("running: the run timeout stops the run") {
        config::ServiceSpec s = spec("web");
        s.timeout = 5s;
        Driver d(s);
        d.start(at(0));
        d.out.clear();
        d.svc.on_time(at(5), d.out);
        CHECK(d.svc.state() == State::stopping);
        CHECK(d.take() == "signal 0 r1 pid 100 TERM group +cont");
    }
    SUBCASE("stopping: SIGKILL at the kill deadline") {
        Driver d(spec_for(From::stopping));
        bring(d, From::stopping);
        d.svc.on_time(at(5.5), d.out);
        CHECK(d.svc.state() == State::stopping);
        CHECK(d.take() == "signal 0 r1 pid 100 KILL group");
        CHECK(d.svc.next_deadline() == std::nullopt);
    }
    for (From from : {From::backoff, From::storm_pause, From::storm_hold}) {
        CAPTURE(static_cast<int>(from));
        Driver d(spec_for(from));
        bring(d, from);
        State waiting_in = from == From::backoff ? State::backoff : State::storm_pause;
        CHECK(d.svc.state() == waiting_in);
        CHECK(d.svc.restart_pending());
        CHECK(d.svc.held_by_daemon() == (from == From::storm_hold));
        TimePoint due = *d.svc.next_deadline();
        d.svc.on_time(Now{due - 1ms, 0}, d.out);
        CHECK(d.svc.state() == waiting_in);
        d.svc.on_time(Now{due, 0}, d.out);
        CHECK(d.svc.state() == State::waiting);
        CHECK(d.svc.restart_pending());  // launched at once, as the restart it is
        CHECK(d.take() == "");
    }
}

TEST_CASE("state table: operator stop and restart rows") {
    check_rows({
        {"stop running", From::running, stop, State::stopping,
         "signal 0 r1 pid 100 TERM group +cont", ""},
        {"stop starting", From::starting, stop, State::stopping,
         "signal 0 r1 pid 100 TERM group +cont", ""},
        {"stop stopping", From::stopping, stop, State::stopping, "", ""},
        {"stop launching", From::launching, stop, State::starting, "", ""},
        {"stop waiting", From::waiting, stop, State::stopped, "stopped web r0", ""},
        {"stop restart_due", From::restart_due, stop, State::stopped, "stopped web r1", ""},
        {"stop backoff", From::backoff, stop, State::stopped, "stopped web r1", ""},
        {"stop storm_pause", From::storm_pause, stop, State::stopped, "stopped web r1", ""},
        {"stop storm_hold", From::storm_hold, stop, State::stopped, "stopped web r1", ""},
        {"stop stopped", From::stopped, stop, State::stopped, "", ""},
        {"stop done", From::done, stop, State::done, "", ""},
        {"restart running", From::running, restart, State::stopping,
         "signal 0 r1 pid 100 TERM group +cont", ""},
        {"restart backoff", From::backoff, restart, State::waiting, "", ""},
        {"restart failed", From::failed, restart, State::waiting, "", ""},
    });
    SUBCASE("an operator stop turns pkitd's own kill under way into a stop") {
        config::ServiceSpec s = spec("web");
        s.timeout = 5s;
        Driver d(s);
        d.start(at(0));
        d.svc.on_time(at(5), d.out);
        d.svc.stop(at(6), d.out, AfterStop::stay_stopped, std::nullopt);
        d.out.clear();
        Outcome o = d.svc.on_exit(1, killed(SIGTERM), at(7), d.out, 0.5);
        CHECK(d.svc.state() == State::stopped);
        CHECK(describe(o) == "ended stopped (operator)");
    }
}

TEST_CASE("state table: group, root, reload, shutdown and storm hold rows") {
    SUBCASE("group restart: a run is stopped and relaunched, counted") {
        Driver d(spec("web"));
        d.start(at(0));
        d.out.clear();
        d.svc.restart_by_group(at(1), d.out);
        CHECK(d.svc.state() == State::stopping);
        CHECK(d.svc.restarts() == 1);
        d.exit(at(2), killed(SIGTERM));
        CHECK(d.svc.state() == State::waiting);
        d.svc.restart_by_group(at(3), d.out);  // no run: nothing
        CHECK(d.svc.state() == State::waiting);
        CHECK(d.svc.restarts() == 1);
    }
    SUBCASE("root restart: a run is stopped and relaunched; without one, waiting") {
        Driver d(spec_for(From::failed));
        bring(d, From::failed);
        d.svc.restart_by_root(at(2), d.out);
        CHECK(d.svc.state() == State::waiting);
        CHECK(d.svc.restarts() == 1);
        CHECK(d.svc.desired_up());
        Driver r(spec("web"));
        r.start(at(0));
        r.svc.restart_by_root(at(2), r.out);
        CHECK(r.svc.state() == State::stopping);
    }
    SUBCASE("reload: a new spec, fresh counters, no pending restart") {
        Driver d(spec_for(From::restart_due));
        bring(d, From::restart_due);
        CHECK(d.svc.restarts() == 1);
        d.svc.replace_spec(spec("web"), std::nullopt);
        CHECK(d.svc.restarts() == 0);
        CHECK(d.svc.state() == State::waiting);
        CHECK_FALSE(d.svc.restart_pending());
    }
    SUBCASE("shutdown: kill_now ends a run pkitd was not yet stopping") {
        Driver d(spec("web"));
        d.start(at(0));
        d.out.clear();
        d.svc.kill_now(d.out);
        CHECK(d.svc.state() == State::stopping);
        CHECK(d.take() == "signal 0 r1 pid 100 KILL group");
        CHECK_FALSE(d.svc.desired_up());
        CHECK(d.svc.next_deadline() == std::nullopt);
    }
    SUBCASE("storm hold: a pending restart waits for the daemon's pause") {
        for (From from : {From::restart_due, From::backoff, From::storm_pause}) {
            CAPTURE(static_cast<int>(from));
            Driver d(spec_for(from));
            bring(d, from);
            d.svc.hold_until(at(50).mono);
            CHECK(d.svc.state() == State::storm_pause);
            CHECK(d.svc.held_by_daemon());
            CHECK(seconds(d.svc.restart_at()) == 50.0);
        }
        Driver own(spec_for(From::storm_pause));
        bring(own, From::storm_pause);
        own.svc.hold_until(at(2).mono);  // its own pause ends later
        CHECK(own.svc.state() == State::storm_pause);
        CHECK_FALSE(own.svc.held_by_daemon());
        Driver idle(spec("web"));
        idle.svc.want_up(at(0), idle.out, true);
        idle.svc.hold_until(at(50).mono);  // no restart pending: not held
        CHECK(idle.svc.state() == State::waiting);
    }
}

}  // namespace
}  // namespace pkit::core
