// [health] memory_max (SPEC §20): the core's decision on each measurement of a run.

#include <doctest/doctest.h>

#include "daemon/core/service.hpp"
#include "tests/unit/core/fake.hpp"

using namespace pkit::core;
using namespace pkit::core::test;
using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t k_mib = 1024 * 1024;

pkit::config::ServiceSpec limited() {
    auto s = spec("web");
    s.health.edit().memory_max = 200 * k_mib;
    return s;
}

// A service with a running run (pid 100).
struct Running {
    explicit Running(pkit::config::ServiceSpec s) : svc(std::move(s), 0, std::nullopt) {
        svc.want_up(at(0), out, true);
        svc.launch(at(0), out);
        svc.on_spawned(svc.run(), 100, at(0), out);
        out.clear();
    }
    bool signalled() const {
        return std::ranges::any_of(
            out, [](const Action& a) { return std::holds_alternative<SignalAction>(a); });
    }
    const Event* kill_event() const {
        for (const Action& a : out) {
            if (const auto* e = std::get_if<EmitAction>(&a);
                e != nullptr && e->event.type == EventType::liveness_kill) {
                return &e->event;
            }
        }
        return nullptr;
    }
    Service svc;
    Actions out;
};

}  // namespace

TEST_CASE("memory_max: two measurements in a row over it stop the run, killed_by memory") {
    Running r(limited());
    r.svc.on_memory(r.svc.run(), 250 * k_mib, false, at(1), r.out);
    CHECK(r.svc.memory_over() == 1);
    CHECK_FALSE(r.signalled());
    CHECK(r.svc.state() == State::running);
    r.svc.on_memory(r.svc.run(), 260 * k_mib, false, at(2), r.out);
    CHECK(r.signalled());
    CHECK(r.svc.state() == State::stopping);
    CHECK(r.svc.memory_kills() == 1);
    CHECK(r.svc.liveness_kills() == 0);
    const Event* e = r.kill_event();
    REQUIRE(e != nullptr);
    CHECK(e->reason == "over memory_max 200MiB (RSS 260MiB)");
    // The exit that follows is a crash, killed by memory, and restarted.
    Outcome o = r.svc.on_exit(r.svc.run(), ProcessExit{std::nullopt, SIGTERM}, at(2.1), r.out, 0.5);
    CHECK(o.crashed);
    CHECK(o.restart.has_value());
    REQUIRE(r.svc.last_exit());
    CHECK(r.svc.last_exit()->killed_by == KilledBy::memory);
    CHECK(to_string(KilledBy::memory) == "memory");
}

TEST_CASE("memory_max: a measurement at or under it starts the count again") {
    Running r(limited());
    r.svc.on_memory(r.svc.run(), 250 * k_mib, true, at(1), r.out);
    r.svc.on_memory(r.svc.run(), 200 * k_mib, true, at(2), r.out);
    CHECK(r.svc.memory_over() == 0);
    r.svc.on_memory(r.svc.run(), 250 * k_mib, true, at(3), r.out);
    CHECK_FALSE(r.signalled());
    r.svc.on_memory(r.svc.run(), 250 * k_mib, true, at(4), r.out);
    CHECK(r.signalled());
    REQUIRE(r.kill_event() != nullptr);
    CHECK(r.kill_event()->reason == "over memory_max 200MiB (memory.current 250MiB)");
}

TEST_CASE("memory_max: another run's measurement, or none set, changes nothing") {
    Running r(limited());
    r.svc.on_memory(r.svc.run() + 1, 900 * k_mib, false, at(1), r.out);
    r.svc.on_memory(r.svc.run() + 1, 900 * k_mib, false, at(2), r.out);
    CHECK(r.svc.memory_over() == 0);
    CHECK(r.out.empty());
    Running plain(spec("web"));
    plain.svc.on_memory(plain.svc.run(), 900 * k_mib, false, at(1), plain.out);
    plain.svc.on_memory(plain.svc.run(), 900 * k_mib, false, at(2), plain.out);
    CHECK(plain.out.empty());
    CHECK(plain.svc.state() == State::running);
}

TEST_CASE("memory = true in give_up_when and stop_when matches a memory stop") {
    auto s = limited();
    s.give_up_when.edit().memory = true;
    Running r(s);
    r.svc.on_memory(r.svc.run(), 250 * k_mib, false, at(1), r.out);
    r.svc.on_memory(r.svc.run(), 250 * k_mib, false, at(2), r.out);
    Outcome o = r.svc.on_exit(r.svc.run(), ProcessExit{std::nullopt, SIGTERM}, at(2.1), r.out, 0.5);
    CHECK(o.crashed);
    REQUIRE(o.ended);
    CHECK(o.ended->reason == StopReason::gave_up);
    CHECK(r.svc.last_decision().why == "gave up: a memory_max stop matched give_up_when.memory");

    auto t = limited();
    t.stop_when.edit().memory = true;
    Running q(t);
    q.svc.on_memory(q.svc.run(), 250 * k_mib, false, at(1), q.out);
    q.svc.on_memory(q.svc.run(), 250 * k_mib, false, at(2), q.out);
    Outcome p = q.svc.on_exit(q.svc.run(), ProcessExit{std::nullopt, SIGTERM}, at(2.1), q.out, 0.5);
    REQUIRE(p.ended);
    CHECK(p.ended->reason == StopReason::predicate);
}
