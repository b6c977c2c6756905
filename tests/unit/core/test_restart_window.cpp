// max_restarts (SPEC §3, gate 4): over the whole life, or in a sliding window where
// restarts that have left the window free up room.

#include <doctest/doctest.h>

#include "daemon/core/policy.hpp"
#include "tests/unit/core/fake.hpp"

namespace pkit::core {
namespace {

using namespace test;

// Decides one crash (exit 1) at each of `times`; returns which were restarted.
std::vector<bool> restarted(const config::ServiceSpec& s, const std::vector<double>& times) {
    RunResult crash;
    crash.code = 1;
    crash.duration = 1s;
    PolicyState state;
    std::vector<bool> result;
    for (double t : times) {
        result.push_back(decide(s, crash, state, mono(t), 0.5).restart);
    }
    return result;
}

TEST_CASE("max_restarts over the whole life: N restarts, N + 1 runs") {
    config::ServiceSpec s = spec("web");
    SUBCASE("N = 2") {
        s.restart.max_restarts = 2;
        CHECK(restarted(s, {0, 100, 200, 300}) == std::vector<bool>{true, true, false, false});
    }
    SUBCASE("N = 0: exactly one run") {
        s.restart.max_restarts = 0;
        CHECK(restarted(s, {0}) == std::vector<bool>{false});
    }
    SUBCASE("-1: unlimited") {
        s.restart.max_restarts = -1;
        std::vector<double> times(500);
        for (std::size_t i = 0; i < times.size(); ++i) {
            times[i] = static_cast<double>(i);
        }
        CHECK(restarted(s, times) == std::vector<bool>(500, true));
    }
}

TEST_CASE("max_restarts within a sliding window: old restarts free up room") {
    config::ServiceSpec s = spec("web");
    s.restart.max_restarts = 2;
    s.restart.within = 10s;
    // Restarts at 0 and 1 fill the window; at 5 it is full; at 10 the one from 0 has
    // left (exactly `within` ago), at 10.5 the one from 1 is still inside with 10's.
    CHECK(restarted(s, {0, 1, 5, 10, 10.5, 11, 30}) ==
          std::vector<bool>{true, true, false, true, false, true, true});
}

TEST_CASE("restart window counts restarts decided inside it") {
    RestartWindow w;
    w.record(mono(0), 10s);
    w.record(mono(4), 10s);
    CHECK(w.count(mono(9.999), 10s) == 2);
    CHECK(w.count(mono(10), 10s) == 1);
    CHECK(w.count(mono(14), 10s) == 0);
    SUBCASE("without a window it counts the whole life") {
        RestartWindow life;
        life.record(mono(0), 0s);
        life.record(mono(1000), 0s);
        CHECK(life.count(mono(1e6), 0s) == 2);
    }
}

}  // namespace
}  // namespace pkit::core
