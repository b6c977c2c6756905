// The order of the gates after a completed run (SPEC §3): stop_when, the policy,
// give_up_when (only for a crash that would be restarted), max_restarts, restart.

#include <doctest/doctest.h>

#include "daemon/core/policy.hpp"
#include "tests/unit/core/fake.hpp"

namespace pkit::core {
namespace {

using namespace test;
using config::LaunchError;
using config::Predicate;
using config::RestartPolicy;

RunResult exit_run(int code, bool clean) {
    RunResult r;
    r.code = code;
    r.clean = clean;
    r.duration = 1s;
    return r;
}

RunResult signal_run(int signal, KilledBy by = KilledBy::none) {
    RunResult r;
    r.signal = signal;
    r.killed_by = by;
    r.duration = 1s;
    return r;
}

RunResult launch_run(LaunchError kind) {
    RunResult r;
    r.launch_error = LaunchFailure{kind, std::string(config::to_string(kind)) + ": /x: oops"};
    return r;
}

// A run whose output had lines that matched, as Service records them on arrival.
RunResult with_output(RunResult r, std::optional<std::string> stop_when,
                      std::optional<std::string> give_up_when) {
    r.output.stop_when = std::move(stop_when);
    r.output.give_up_when = std::move(give_up_when);
    return r;
}

struct Row {
    const char* name;
    RestartPolicy policy;
    Predicate stop_when;
    Predicate give_up_when;
    int max_restarts;
    RunResult run;
    std::optional<StopReason> ended;  // nullopt: restarted
};

TEST_CASE("gates are checked in SPEC order: stop_when, policy, give_up_when, max_restarts") {
    const auto on_crash = RestartPolicy::on_crash;
    const auto always = RestartPolicy::always;
    const auto never = RestartPolicy::never;
    using R = StopReason;

    const Row rows[] = {
        {"stop_when wins over give_up_when",
         on_crash,
         {.exit_codes = {3}},
         {.exit_codes = {3}},
         -1,
         exit_run(3, false),
         R::predicate},
        {"stop_when wins over the policy",
         always,
         {.exit_codes = {0}},
         {},
         -1,
         exit_run(0, true),
         R::predicate},
        {"stop_when by signal",
         on_crash,
         {.signals = {SIGUSR1}},
         {},
         -1,
         signal_run(SIGUSR1),
         R::predicate},
        {"stop_when by output",
         on_crash,
         {.output_matches = pattern("FATAL")},
         {},
         -1,
         with_output(exit_run(1, false), "FATAL: config missing", std::nullopt),
         R::predicate},
        {"stop_when wins over max_restarts",
         on_crash,
         {.exit_codes = {1}},
         {},
         0,
         exit_run(1, false),
         R::predicate},
        {"stop_when is not consulted for a liveness kill",
         on_crash,
         {.signals = {SIGTERM}},
         {},
         -1,
         signal_run(SIGTERM, KilledBy::liveness),
         std::nullopt},
        {"on_crash and a clean run", on_crash, {}, {}, -1, exit_run(0, true), R::policy_satisfied},
        {"on_crash and a crash restarts", on_crash, {}, {}, -1, exit_run(1, false), std::nullopt},
        {"never after a crash", never, {}, {}, -1, exit_run(1, false), R::policy_satisfied},
        {"never after a clean run", never, {}, {}, -1, exit_run(0, true), R::policy_satisfied},
        {"never wins over give_up_when",
         never,
         {},
         {.exit_codes = {78}},
         -1,
         exit_run(78, false),
         R::policy_satisfied},
        {"never after a liveness kill",
         never,
         {},
         {},
         -1,
         signal_run(SIGKILL, KilledBy::liveness),
         R::unhealthy},
        {"always goes on after a clean run", always, {}, {}, -1, exit_run(0, true), std::nullopt},
        {"always: give_up_when is not consulted for a clean run",
         always,
         {},
         {.exit_codes = {0}},
         -1,
         exit_run(0, true),
         std::nullopt},
        {"always: a clean run does not count against max_restarts",
         always,
         {},
         {},
         0,
         exit_run(0, true),
         std::nullopt},
        {"give_up_when exit code",
         on_crash,
         {},
         {.exit_codes = {78}},
         -1,
         exit_run(78, false),
         R::gave_up},
        {"give_up_when other exit code",
         on_crash,
         {},
         {.exit_codes = {78}},
         -1,
         exit_run(1, false),
         std::nullopt},
        {"give_up_when signal",
         on_crash,
         {},
         {.signals = {SIGSEGV}},
         -1,
         signal_run(SIGSEGV),
         R::gave_up},
        {"give_up_when output recorded for the run",
         on_crash,
         {},
         {.output_matches = pattern("FATAL: .*missing")},
         -1,
         with_output(exit_run(1, false), std::nullopt, "FATAL: config missing"),
         R::gave_up},
        {"give_up_when output: no line of the run matched",
         on_crash,
         {},
         {.output_matches = pattern("FATAL")},
         -1,
         exit_run(1, false),
         std::nullopt},
        {"a line matched stop_when only: give_up_when does not use it",
         on_crash,
         {},
         {.output_matches = pattern("FATAL")},
         -1,
         with_output(exit_run(1, false), "FATAL", std::nullopt),
         std::nullopt},
        {"give_up_when launch error listed",
         on_crash,
         {},
         {.launch_errors = {LaunchError::not_found}},
         -1,
         launch_run(LaunchError::not_found),
         R::gave_up},
        {"give_up_when launch error not listed",
         on_crash,
         {},
         {.launch_errors = {LaunchError::not_found}},
         -1,
         launch_run(LaunchError::permission_denied),
         std::nullopt},
        {"give_up_when launch_errors any",
         on_crash,
         {},
         {.any_launch_error = true},
         -1,
         launch_run(LaunchError::bad_cwd),
         R::gave_up},
        {"give_up_when wins over max_restarts",
         on_crash,
         {},
         {.exit_codes = {78}},
         0,
         exit_run(78, false),
         R::gave_up},
        {"max_restarts 0 ends after one run",
         on_crash,
         {},
         {},
         0,
         exit_run(1, false),
         R::restarts_exhausted},
        {"a launch failure is a crash",
         on_crash,
         {},
         {},
         0,
         launch_run(LaunchError::other),
         R::restarts_exhausted},
    };
    for (const Row& row : rows) {
        CAPTURE(row.name);
        config::ServiceSpec s = spec("web");
        s.restart.policy = row.policy;
        s.restart.max_restarts = row.max_restarts;
        s.stop_when = row.stop_when;
        s.give_up_when = row.give_up_when;
        PolicyState state;
        Decision d = decide(s, row.run, state, mono(10), 0.5);
        CHECK(d.restart == !row.ended.has_value());
        if (row.ended) {
            CHECK(to_string(d.reason) == to_string(*row.ended));
        } else {
            CHECK(d.delay == 200ms);
        }
    }
}

TEST_CASE("a matching predicate says which rule matched") {
    Predicate p{.exit_codes = {78}, .signals = {SIGSEGV}};
    const std::optional<std::string> none;
    CHECK(match_predicate(p, exit_run(78, false), none, "give_up_when") ==
          "exit 78 matched give_up_when.exit_codes");
    CHECK(match_predicate(p, exit_run(77, false), none, "give_up_when") == std::nullopt);
    CHECK(match_predicate(Predicate{}, exit_run(78, false), none, "x") == std::nullopt);
    Predicate out{.output_matches = pattern("^bad")};
    CHECK(match_predicate(out, exit_run(1, false), std::string("bad config"), "stop_when") ==
          "output line \"bad config\" matched stop_when.output_matches");
    CHECK(match_predicate(out, exit_run(1, false), none, "stop_when") == std::nullopt);
}

RunResult oom_run(std::optional<int> signal, std::optional<int> code = std::nullopt) {
    RunResult r;
    r.signal = signal;
    r.code = code;
    r.duration = 1s;
    r.oom_killed = true;
    return r;
}

TEST_CASE("oom = true matches a run the OOM killer killed in, and nothing else") {
    const std::optional<std::string> none;
    Predicate oom{.oom = true};
    CHECK_FALSE(oom.empty());
    CHECK(match_predicate(oom, oom_run(SIGKILL), none, "give_up_when") ==
          "an OOM kill matched give_up_when.oom");
    // A helper process was killed, the main process exited on its own: still an OOM kill.
    CHECK(match_predicate(oom, oom_run(std::nullopt, 1), none, "stop_when") ==
          "an OOM kill matched stop_when.oom");
    // SIGKILL without an OOM kill (the operator's kill -9) does not match.
    CHECK(match_predicate(oom, signal_run(SIGKILL), none, "give_up_when") == std::nullopt);
    CHECK(match_predicate(Predicate{}, oom_run(SIGKILL), none, "give_up_when") == std::nullopt);
}

TEST_CASE("the gates word an OOM kill with the service's memory_max, and oom = true ends it") {
    config::ServiceSpec s = spec("web");
    s.restart.policy = RestartPolicy::always;
    PolicyState state;
    SUBCASE("no predicate: restarted, and the decision says why the run ended") {
        s.resources.edit().memory_max = 256ULL << 20;
        Decision d = decide(s, oom_run(SIGKILL), state, mono(1), 0.5);
        CHECK(d.restart);
        CHECK(d.why == "killed by the OOM killer (memory_max 256MiB)");
        CHECK(oom_words(std::nullopt) == "killed by the OOM killer");
    }
    SUBCASE("give_up_when.oom gives up") {
        s.give_up_when.edit().oom = true;
        Decision d = decide(s, oom_run(SIGKILL), state, mono(1), 0.5);
        CHECK_FALSE(d.restart);
        CHECK(d.reason == StopReason::gave_up);
        CHECK(d.why == "gave up: an OOM kill matched give_up_when.oom");
        // The same crash without an OOM kill is restarted.
        CHECK(decide(s, signal_run(SIGKILL), state, mono(2), 0.5).restart);
    }
    SUBCASE("stop_when.oom stops, even a clean exit") {
        s.stop_when.edit().oom = true;
        RunResult clean = oom_run(std::nullopt, 0);
        clean.clean = true;
        Decision d = decide(s, clean, state, mono(1), 0.5);
        CHECK_FALSE(d.restart);
        CHECK(d.reason == StopReason::predicate);
        CHECK(d.why == "an OOM kill matched stop_when.oom");
    }
    SUBCASE("policy never: the words name the OOM kill and the exit it led to") {
        s.restart.policy = RestartPolicy::never;
        Decision d = decide(s, oom_run(std::nullopt, 3), state, mono(1), 0.5);
        CHECK(d.why == "killed by the OOM killer; the run exited 3 and the policy is never");
    }
}

}  // namespace
}  // namespace pkit::core
