// The restart policy as plain functions (SPEC §3): backoff, reset_after, the storm
// score and the restart window. The gate order is in test_policy_gates.cpp.

#include <doctest/doctest.h>

#include <climits>

#include "daemon/core/policy.hpp"
#include "tests/unit/core/fake.hpp"

namespace pkit::core {
namespace {

using namespace test;

config::RestartSpec restart_spec(Duration initial, double factor, Duration max, bool jitter) {
    config::RestartSpec r;
    r.backoff_initial = initial;
    r.backoff_factor = factor;
    r.max_backoff = max;
    r.jitter = jitter;
    return r;
}

config::StormSpec storm_spec() {
    config::StormSpec s;
    s.pause = 30s;
    s.threshold = 5.0;
    s.decay = 60s;
    return s;
}

TEST_CASE("backoff delay is min(initial x factor^n, max) x j") {
    const auto r = restart_spec(200ms, 2.0, 30s, false);
    struct Row {
        int step;
        Duration expected;
    };
    const Row rows[] = {
        {0, 200ms}, {1, 400ms}, {2, 800ms}, {3, 1600ms}, {7, 25600ms}, {8, 30s}, {20, 30s},
    };
    for (const Row& row : rows) {
        CAPTURE(row.step);
        CHECK(backoff_delay(r, row.step, 0.5) == row.expected);
    }
}

TEST_CASE("backoff jitter multiplies by a factor in [0.5, 1.5)") {
    const auto r = restart_spec(200ms, 2.0, 30s, true);
    SUBCASE("u01 = 0 halves the delay") {
        CHECK(backoff_delay(r, 0, 0.0) == 100ms);
        CHECK(backoff_delay(r, 2, 0.0) == 400ms);
    }
    SUBCASE("u01 = 0.999 gives just under 1.5 times") {
        CHECK(to_seconds(backoff_delay(r, 0, 0.999)) == doctest::Approx(0.2998).epsilon(1e-9));
        CHECK(backoff_delay(r, 0, 0.999) < 300ms);
    }
    SUBCASE("jitter applies after the cap") {
        CHECK(backoff_delay(r, 30, 0.0) == 15s);
        CHECK(to_seconds(backoff_delay(r, 30, 0.999)) == doctest::Approx(44.97).epsilon(1e-9));
    }
    SUBCASE("without jitter the draw is ignored") {
        const auto fixed = restart_spec(200ms, 2.0, 30s, false);
        CHECK(backoff_delay(fixed, 1, 0.0) == 400ms);
        CHECK(backoff_delay(fixed, 1, 0.999) == 400ms);
    }
}

TEST_CASE("backoff factor 1 keeps the first delay") {
    const auto r = restart_spec(750ms, 1.0, 30s, false);
    CHECK(backoff_delay(r, 0, 0.5) == 750ms);
    CHECK(backoff_delay(r, 1, 0.5) == 750ms);
    CHECK(backoff_delay(r, 1000, 0.5) == 750ms);
}

TEST_CASE("backoff is capped at max_backoff and a huge step does not overflow") {
    const auto r = restart_spec(200ms, 2.0, 30s, false);
    CHECK(backoff_delay(r, 64, 0.5) == 30s);
    CHECK(backoff_delay(r, 2000, 0.5) == 30s);  // 2^2000 is inf in double
    CHECK(backoff_delay(r, INT_MAX, 0.5) == 30s);
    const auto big = restart_spec(1s, 10.0, 24h, false);
    CHECK(backoff_delay(big, 400, 0.5) == 24h);
}

TEST_CASE("a run lasting reset_after or longer resets the backoff before its own restart") {
    config::ServiceSpec s = spec("web");  // reset_after 60 s, 200 ms doubling
    RunResult run;
    run.code = 1;
    PolicyState state;
    state.backoff_step = 3;
    SUBCASE("exactly reset_after") {
        run.duration = 60s;
        Decision d = decide(s, run, state, mono(100), 0.5);
        CHECK(d.restart);
        CHECK(d.backoff_step == 0);
        CHECK(d.delay == 200ms);
        CHECK(state.backoff_step == 1);
    }
    SUBCASE("just shorter") {
        run.duration = 60s - 1ms;
        Decision d = decide(s, run, state, mono(100), 0.5);
        CHECK(d.restart);
        CHECK(d.backoff_step == 3);
        CHECK(d.delay == 1600ms);
        CHECK(state.backoff_step == 4);
    }
}

TEST_CASE("consecutive crashes walk the backoff steps") {
    config::ServiceSpec s = spec("web");
    RunResult run;
    run.code = 1;
    run.duration = 1s;
    PolicyState state;
    const Duration expected[] = {200ms, 400ms, 800ms, 1600ms, 3200ms};
    for (int i = 0; i < 5; ++i) {
        Decision d = decide(s, run, state, mono(i), 0.5);
        CAPTURE(i);
        CHECK(d.restart);
        CHECK(d.backoff_step == i);
        CHECK(d.delay == expected[i]);
        CHECK(d.restarts_counted == i + 1);
    }
}

TEST_CASE("storm: six crashes 0.2 s apart trip one pause, five do not") {
    const auto storm = storm_spec();
    StormScore score;
    for (int i = 0; i < 5; ++i) {
        CAPTURE(i);
        CHECK_FALSE(score.add_crash(mono(0.2 * i), storm));
    }
    // Five land just under 5.0 because the score decays between them.
    const double five = score.value(mono(0.8), storm.decay);
    CHECK(five < 5.0);
    CHECK(five == doctest::Approx(4.977).epsilon(1e-3));
    CHECK(score.add_crash(mono(1.0), storm));
    CHECK(score.value(mono(1.0), storm.decay) == 0.0);
}

TEST_CASE("storm: crashes 60 s apart never trip, the score tends to 2") {
    const auto storm = storm_spec();
    StormScore score;
    // After k crashes the score is 2 - 2^(1-k): 1, 1.5, 1.75, ...
    const double expected[] = {1.0, 1.5, 1.75, 1.875};
    for (int i = 0; i < 4; ++i) {
        REQUIRE_FALSE(score.add_crash(mono(60.0 * i), storm));
        CHECK(score.value(mono(60.0 * i), storm.decay) == doctest::Approx(expected[i]));
    }
    for (int i = 4; i < 200; ++i) {
        CAPTURE(i);
        REQUIRE_FALSE(score.add_crash(mono(60.0 * i), storm));
    }
    const double now = score.value(mono(60.0 * 199), storm.decay);
    CHECK(now <= 2.0);
    CHECK(now == doctest::Approx(2.0));
    // One half-life later it has halved.
    CHECK(score.value(mono(60.0 * 200), storm.decay) == doctest::Approx(1.0));
}

TEST_CASE("storm: after a trip the score starts again from 0") {
    const auto storm = storm_spec();
    StormScore score;
    for (int i = 0; i < 5; ++i) {
        score.add_crash(mono(0.2 * i), storm);
    }
    REQUIRE(score.add_crash(mono(1.0), storm));
    CHECK_FALSE(score.add_crash(mono(1.2), storm));
    CHECK(score.value(mono(1.2), storm.decay) == doctest::Approx(1.0));
    for (int i = 2; i < 6; ++i) {
        CAPTURE(i);
        CHECK_FALSE(score.add_crash(mono(1.0 + 0.2 * i), storm));
    }
    CHECK(score.add_crash(mono(2.4), storm));
}

TEST_CASE("storm: the tripping restart waits the pause instead of the backoff") {
    config::ServiceSpec s = spec("web");
    s.storm = storm_spec();
    RunResult run;
    run.code = 1;
    run.duration = 100ms;
    PolicyState state;
    for (int i = 0; i < 5; ++i) {
        Decision d = decide(s, run, state, mono(0.2 * i), 0.5);
        CAPTURE(i);
        CHECK(d.restart);
        CHECK_FALSE(d.storm_tripped);
        CHECK(d.delay == backoff_delay(s.restart, i, 0.5));
    }
    Decision d = decide(s, run, state, mono(1.0), 0.5);
    CHECK(d.restart);
    CHECK(d.storm_tripped);
    CHECK(d.delay == 30s);
    CHECK(d.storm_score == doctest::Approx(5.965).epsilon(1e-3));
    CHECK(state.storm.value(mono(1.0), s.storm->decay) == 0.0);
}

TEST_CASE("storm: off unless pause is set") {
    config::ServiceSpec s = spec("web");
    RunResult run;
    run.code = 1;
    PolicyState state;
    for (int i = 0; i < 20; ++i) {
        Decision d = decide(s, run, state, mono(0.01 * i), 0.5);
        CHECK_FALSE(d.storm_tripped);
    }
}

TEST_CASE("an exhausted decision counts the restarts used, as its words do") {
    config::ServiceSpec s = spec("flaky");
    s.restart.max_restarts = 2;
    RunResult run;
    run.code = 1;
    run.duration = 1s;
    PolicyState state;
    for (int i = 0; i < 2; ++i) {
        CHECK(decide(s, run, state, mono(i), 0.5).restart);
    }
    Decision d = decide(s, run, state, mono(2), 0.5);
    CHECK_FALSE(d.restart);
    CHECK(d.reason == StopReason::restarts_exhausted);
    CHECK(d.why.find("2 of 2 restarts used") != std::string::npos);
    CHECK(d.restarts_counted == 2);
    // A clean exit that the policy ends is counted alike.
    s.restart.policy = config::RestartPolicy::on_crash;
    run.code = 0;
    run.clean = true;
    PolicyState fresh = state;
    CHECK(decide(s, run, fresh, mono(3), 0.5).restarts_counted == 2);
}

}  // namespace
}  // namespace pkit::core
