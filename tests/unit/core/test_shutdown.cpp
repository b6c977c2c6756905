// Graceful shutdown (SPEC §7): dependents first, independent services at once,
// ExitAction{0} once all are down, shutdown_timeout caps every escalation.

#include <doctest/doctest.h>

#include "daemon/core/supervisor.hpp"
#include "tests/unit/core/fake.hpp"

namespace pkit::core {
namespace {

using namespace test;

// api (0) after db (1); web (2) stands alone. All running: api pid 100, db 101, web 102.
Supervisor three_running(config::DaemonSpec daemon = {}) {
    Supervisor sup = supervisor({spec_after("api", {"db"}), spec("db"), spec("web")}, daemon);
    sup.start(at(0));
    sup.on_spawned(1, 1, 101, at(0));
    sup.on_spawned(2, 1, 102, at(0));
    sup.on_spawned(0, 1, 100, at(0));
    sup.take_actions();
    return sup;
}

TEST_CASE("shutdown stops dependents first and independent services together") {
    Supervisor sup = three_running();
    sup.shutdown(at(10));
    CHECK(sup.shutting_down());
    CHECK(take(sup) ==
          "signal 2 r1 pid 102 TERM group +cont | signal 0 r1 pid 100 TERM group +cont");
    CHECK(sup.service(1).state() == State::running);

    sup.on_exit(100, killed(SIGTERM), at(10.5));
    CHECK(take(sup) ==
          "exited api r1 signal TERM by operator | cleanup 0 pgid 100 TERM grace 5000ms | "
          "stopped api r1 | signal 1 r1 pid 101 TERM group +cont");
    sup.on_exit(102, exited(0), at(10.6));
    CHECK(take(sup) ==
          "exited web r1 code 0 by operator | cleanup 2 pgid 102 TERM grace 5000ms | "
          "stopped web r1");
    sup.on_exit(101, exited(0), at(10.7));
    CHECK(take(sup) ==
          "exited db r1 code 0 by operator | cleanup 1 pgid 101 TERM grace 5000ms | "
          "stopped db r1 | exit 0");
    for (std::size_t i = 0; i < 3; ++i) {
        CHECK(sup.service(i).state() == State::stopped);
        CHECK(sup.service(i).restarts() == 0);
    }
    CHECK(sup.next_deadline() == std::nullopt);
}

TEST_CASE("a service with several dependents stops after the last of them") {
    // db (2) has three dependents: api1 (0) and api2 (1) running, idle (3) never started.
    config::ServiceSpec idle = spec_after("idle", {"db"});
    idle.autostart = false;
    Supervisor sup =
        supervisor({spec_after("api1", {"db"}), spec_after("api2", {"db"}), spec("db"), idle});
    sup.start(at(0));
    sup.on_spawned(2, 1, 102, at(0));
    sup.on_spawned(0, 1, 100, at(0));
    sup.on_spawned(1, 1, 101, at(0));
    sup.take_actions();

    sup.shutdown(at(10));
    CHECK(take(sup) ==
          "signal 1 r1 pid 101 TERM group +cont | signal 0 r1 pid 100 TERM group +cont");
    sup.on_exit(100, exited(0), at(10.5));
    CHECK(take(sup) ==
          "exited api1 r1 code 0 by operator | cleanup 0 pgid 100 TERM grace 5000ms | "
          "stopped api1 r1");
    sup.on_exit(101, exited(0), at(10.6));
    CHECK(take(sup) ==
          "exited api2 r1 code 0 by operator | cleanup 1 pgid 101 TERM grace 5000ms | "
          "stopped api2 r1 | signal 2 r1 pid 102 TERM group +cont");
    sup.on_exit(102, exited(0), at(10.7));
    CHECK(take(sup) ==
          "exited db r1 code 0 by operator | cleanup 2 pgid 102 TERM grace 5000ms | "
          "stopped db r1 | exit 0");
}

TEST_CASE("shutdown with nothing running exits at once") {
    config::ServiceSpec lazy = spec("lazy");
    lazy.autostart = false;
    Supervisor sup = supervisor({lazy});
    sup.start(at(0));
    sup.shutdown(at(1));
    CHECK(take(sup) == "exit 0");
    sup.shutdown(at(2));
    sup.on_time(at(3));
    CHECK(take(sup) == "");
}

TEST_CASE("shutdown cancels a pending restart and refuses operator starts") {
    Supervisor sup = three_running();
    sup.on_exit(102, exited(1), at(5));
    sup.take_actions();
    REQUIRE(sup.service(2).state() == State::backoff);
    sup.shutdown(at(5.1));
    CHECK(take(sup) == "stopped web r1 | signal 0 r1 pid 100 TERM group +cont");
    sup.start_service(2, at(5.2));
    sup.restart_service(2, at(5.2));
    sup.on_time(at(5.3));
    CHECK(take(sup) == "");
}

TEST_CASE("a crash during shutdown is not restarted") {
    Supervisor sup = three_running();
    sup.shutdown(at(10));
    sup.take_actions();
    // db has not been asked to stop yet (api is still up) and crashes by itself.
    sup.on_exit(101, exited(1), at(10.1));
    auto crash = sup.take_actions();
    CHECK(only<SpawnAction>(crash).empty());
    // Neither clean nor a crash: no gates, no `restarting`, no restart counted.
    CHECK(describe(crash.back()) == "stopped db r1");
    CHECK(sup.service(1).state() == State::stopped);
    CHECK(sup.service(1).restarts() == 0);
    sup.on_time(at(11));
    CHECK(only<SpawnAction>(sup.take_actions()).empty());
    sup.on_exit(100, killed(SIGTERM), at(11.5));
    auto after_api = sup.take_actions();
    CHECK(only<SpawnAction>(after_api).empty());
    CHECK(describe(after_api.back()) == "stopped api r1");
    sup.on_exit(102, killed(SIGTERM), at(12));
    CHECK(describe(sup.take_actions().back()) == "exit 0");
}

TEST_CASE("shutdown_timeout shortens the SIGKILL escalation and the group cleanup") {
    config::DaemonSpec daemon;
    daemon.shutdown_timeout = 3s;
    Supervisor sup = three_running(daemon);
    sup.shutdown(at(10));
    sup.take_actions();
    CHECK(seconds(sup.next_deadline()) == 13.0);
    sup.on_exit(100, killed(SIGTERM), at(11));
    CHECK(take(sup) ==
          "exited api r1 signal TERM by operator | cleanup 0 pgid 100 TERM grace 2000ms | "
          "stopped api r1 | signal 1 r1 pid 101 TERM group +cont");
    CHECK(seconds(sup.next_deadline()) == 13.0);
    sup.on_time(at(12.9));
    CHECK(take(sup) == "");
    sup.on_time(at(13));
    CHECK(take(sup) == "signal 1 r1 pid 101 KILL group | signal 2 r1 pid 102 KILL group");
    CHECK(sup.next_deadline() == std::nullopt);
    sup.on_exit(101, killed(SIGKILL), at(13.1));
    sup.on_exit(102, killed(SIGKILL), at(13.1));
    // Their groups got SIGKILL with them at the deadline; the grace of a cleanup after
    // it is not asserted (the shell kills groups it still tracks when it exits).
    auto rest = sup.take_actions();
    std::string seen;
    for (const Event& e : events(rest)) {
        seen += describe(e) + "; ";
    }
    CHECK(seen ==
          "exited db r1 signal KILL by operator; stopped db r1; "
          "exited web r1 signal KILL by operator; stopped web r1; ");
    CHECK(describe(rest.back()) == "exit 0");
}

TEST_CASE("at the shutdown deadline everything still running gets SIGKILL") {
    config::DaemonSpec daemon;
    daemon.shutdown_timeout = 3s;
    Supervisor sup = three_running(daemon);
    sup.shutdown(at(10));
    sup.take_actions();
    // Nobody reacts to the stop signal; db was never asked because api is still up.
    sup.on_time(at(13));
    CHECK(take(sup) ==
          "signal 0 r1 pid 100 KILL group | signal 1 r1 pid 101 KILL group | "
          "signal 2 r1 pid 102 KILL group");
    CHECK(sup.next_deadline() == std::nullopt);
    SUBCASE("the dependent is reaped first") {
        sup.on_exit(100, killed(SIGKILL), at(13.1));
        CHECK(take(sup) ==
              "exited api r1 signal KILL by operator | cleanup 0 pgid 100 TERM grace 5000ms | "
              "stopped api r1");  // db is being killed already: no stop signal after the fact
        sup.on_exit(101, killed(SIGKILL), at(13.1));
        sup.on_exit(102, killed(SIGKILL), at(13.1));
    }
    SUBCASE("the dependency is reaped first: its SIGKILL was pkitd's, not a crash") {
        sup.on_exit(101, killed(SIGKILL), at(13.1));
        CHECK(take(sup) ==
              "exited db r1 signal KILL by operator | cleanup 1 pgid 101 TERM grace 5000ms | "
              "stopped db r1");
        sup.on_exit(100, killed(SIGKILL), at(13.1));
        sup.on_exit(102, killed(SIGKILL), at(13.1));
    }
    auto rest = sup.take_actions();
    CHECK(only<SpawnAction>(rest).empty());
    CHECK(events_of(rest, EventType::restarting).empty());
    CHECK(describe(rest.back()) == "exit 0");
    for (std::size_t i = 0; i < 3; ++i) {
        CAPTURE(i);
        CHECK(sup.service(i).state() == State::stopped);
        CHECK(sup.service(i).restarts() == 0);
        CHECK(sup.service(i).stopped_reason() == StopReason::operator_);
        // The log says the deadline killed them, not their stop timeouts.
        REQUIRE(sup.service(i).last_exit());
        CHECK(sup.service(i).last_exit()->shutdown_kill);
    }
}

TEST_CASE(
    "a SIGKILL at the end of a stop timeout before the shutdown deadline is not the deadline's") {
    config::DaemonSpec daemon;
    daemon.shutdown_timeout = 30s;
    Supervisor sup = three_running(daemon);  // stop timeouts of 5 s
    sup.shutdown(at(10));
    sup.take_actions();
    sup.on_time(at(15));
    CHECK(take(sup) == "signal 0 r1 pid 100 KILL group | signal 2 r1 pid 102 KILL group");
    sup.on_exit(102, killed(SIGKILL), at(15.1));
    REQUIRE(sup.service(2).last_exit());
    CHECK_FALSE(sup.service(2).last_exit()->shutdown_kill);
    CHECK(sup.service(2).last_exit()->killed_by == KilledBy::operator_);
}

}  // namespace
}  // namespace pkit::core
