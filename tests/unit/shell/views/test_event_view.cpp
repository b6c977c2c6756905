// pkitd's log wording (event_view): an ended supervision says the state it ended in and
// how the last run ended, in plain words (`migrate: done (exit 0)`, `web: stopped on
// request (exit 0 after SIGTERM)`, `flaky: failed: restarts exhausted (5 of 5 in 1m)`);
// runs pkitd ended say after which signal; counts take the right plural.

#include <csignal>

#include "daemon/core/explain.hpp"
#include "daemon/shell/views/event_view.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

namespace {

core::Event event_of(core::EventType type, std::string reason = "") {
    core::Event e;
    e.type = type;
    e.service = "svc";
    e.run = 2;
    e.reason = std::move(reason);
    return e;
}

core::ExitRecord exit_code(int code, core::KilledBy by = core::KilledBy::none) {
    core::ExitRecord exit;
    exit.code = code;
    exit.killed_by = by;
    exit.duration = std::chrono::milliseconds(3210);
    return exit;
}

core::ExitRecord exit_signal(int signo, core::KilledBy by = core::KilledBy::none) {
    core::ExitRecord exit;
    exit.signal = signo;
    exit.killed_by = by;
    exit.duration = std::chrono::milliseconds(3210);
    return exit;
}

EndFacts facts_of(core::State state, std::optional<core::StopReason> reason,
                  std::optional<core::ExitRecord> exit) {
    EndFacts facts;
    facts.state = state;
    facts.reason = reason;
    facts.last_exit = exit;
    facts.stop_signal = SIGTERM;
    facts.max_restarts = 5;
    facts.within = std::chrono::minutes(1);
    return facts;
}

}  // namespace

TEST_CASE("log wording: a clean end is done with its exit, not a stop") {
    auto facts = facts_of(core::State::done, core::StopReason::policy_satisfied, exit_code(0));
    auto e = event_of(core::EventType::stopped, "exit 0 is clean and the policy is on_crash");
    CHECK(event_text(e, &facts) == "svc: done (exit 0)");

    auto never = facts_of(core::State::failed, core::StopReason::policy_satisfied, exit_code(1));
    CHECK(event_text(event_of(core::EventType::stopped, "exit 1 and the policy is never"),
                     &never) == "svc: failed (exit 1)");
}

TEST_CASE("log wording: an operator's stop is stopped on request, with the run's end") {
    auto e = event_of(core::EventType::stopped, "stopped on request");
    auto trapped = facts_of(core::State::stopped, core::StopReason::operator_,
                            exit_code(0, core::KilledBy::operator_));
    CHECK(event_text(e, &trapped) == "svc: stopped on request (exit 0 after SIGTERM)");
    auto killed = facts_of(core::State::stopped, core::StopReason::operator_,
                           exit_signal(SIGTERM, core::KilledBy::operator_));
    CHECK(event_text(e, &killed) == "svc: stopped on request (ended by SIGTERM)");
    // Stopped while waiting for a restart: the last exit was a crash, not this stop.
    auto waiting = facts_of(core::State::stopped, core::StopReason::operator_, exit_code(1));
    CHECK(event_text(e, &waiting) == "svc: stopped on request");
    // The exited line of a run pkitd stopped says so, never "killed by SIGTERM (operator)".
    auto exited = event_of(core::EventType::exited);
    exited.exit = exit_signal(SIGTERM, core::KilledBy::operator_);
    CHECK(event_text(exited, &killed) == "svc: ended by SIGTERM (run 2, 3.21s)");
    exited.exit = exit_signal(SIGKILL, core::KilledBy::operator_);
    CHECK(event_text(exited, &killed) ==
          "svc: killed by SIGKILL after the stop timeout (run 2, 3.21s)");
    // A crash keeps its own words.
    exited.exit = exit_code(3);
    CHECK(event_text(exited, &killed) == "svc: exited with code 3 after 3.21s (run 2)");
}

TEST_CASE("log wording: restarts exhausted and giving up are failures with their cause") {
    auto facts = facts_of(core::State::failed, core::StopReason::restarts_exhausted, exit_code(1));
    auto e = event_of(core::EventType::restarts_exhausted,
                      "exit 1; 5 of 5 restarts used in the 1m window");
    CHECK(event_text(e, &facts) == "svc: failed: restarts exhausted (5 of 5 in 1m)");
    facts.within = core::Duration::zero();
    facts.max_restarts = 1;
    CHECK(event_text(e, &facts) == "svc: failed: restarts exhausted (1 of 1)");

    auto gave = facts_of(core::State::failed, core::StopReason::gave_up, exit_code(78));
    CHECK(event_text(event_of(core::EventType::gave_up,
                              "gave up: exit 78 matched give_up_when.exit_codes"),
                     &gave) == "svc: failed: gave up: exit 78 matched give_up_when.exit_codes");

    auto unhealthy = facts_of(core::State::failed, core::StopReason::unhealthy,
                              exit_signal(SIGTERM, core::KilledBy::liveness));
    CHECK(event_text(event_of(core::EventType::stopped,
                              "the run was killed by its liveness "
                              "check and the policy is never"),
                     &unhealthy) == "svc: failed: killed by its liveness check");
}

TEST_CASE("log wording: exit words name what pkitd did and why") {
    CHECK(exit_words(exit_code(1), SIGTERM) == "exit 1");
    CHECK(exit_words(exit_signal(SIGSEGV), SIGTERM) == "killed by SIGSEGV");
    CHECK(exit_words(exit_code(0, core::KilledBy::operator_), SIGINT) == "exit 0 after SIGINT");
    CHECK(exit_words(exit_signal(SIGTERM, core::KilledBy::timeout), SIGTERM) ==
          "ended by SIGTERM (timed out)");
    CHECK(exit_words(exit_signal(SIGKILL, core::KilledBy::ready_timeout), SIGTERM) ==
          "killed by SIGKILL after the stop timeout (not ready in time)");
    // Killed at the shutdown deadline, before its own stop timeout ended: said so.
    core::ExitRecord deadline = exit_signal(SIGKILL, core::KilledBy::operator_);
    deadline.shutdown_kill = true;
    CHECK(exit_words(deadline, SIGTERM) == "killed by SIGKILL at the shutdown deadline");
}

TEST_CASE("log wording: an OOM kill names the OOM killer and the memory_max") {
    core::ExitRecord oom = exit_signal(SIGKILL);
    oom.oom_killed = true;
    core::Event exited = event_of(core::EventType::exited);
    exited.exit = oom;
    EndFacts facts = facts_of(core::State::backoff, std::nullopt, oom);
    facts.memory_max = 256ULL << 20;
    CHECK(event_text(exited, &facts) ==
          "svc: killed by the OOM killer (memory_max 256MiB) after 3.21s (run 2)");
    facts.memory_max.reset();
    CHECK(event_text(exited, &facts) == "svc: killed by the OOM killer after 3.21s (run 2)");
    // Another process of the run was killed; the main one exited.
    core::ExitRecord helper = exit_code(1);
    helper.oom_killed = true;
    exited.exit = helper;
    facts.memory_max = 1ULL << 30;
    CHECK(event_text(exited, &facts) ==
          "svc: exited with code 1 after 3.21s; a process of the run was killed by the OOM "
          "killer (memory_max 1GiB) (run 2)");
    CHECK(exit_words(oom, SIGTERM, 64ULL << 20) == "killed by the OOM killer (memory_max 64MiB)");
    CHECK(exit_words(exit_code(1), SIGTERM, 64ULL << 20) == "exit 1");
    // The event carries it, as status's last_exit does.
    exited.exit = oom;
    CHECK(event_json(exited)["oom_killed"] == true);
    exited.exit = exit_code(0);
    CHECK(event_json(exited)["oom_killed"] == false);
}

TEST_CASE("log wording: counts take the singular for one") {
    CHECK(core::count_words(0, "restart") == "0 restarts");
    CHECK(core::count_words(1, "restart") == "1 restart");
    CHECK(core::count_words(4, "restart") == "4 restarts");
}

}  // namespace pkit::shell::test
