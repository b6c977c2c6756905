// The Supervisor: start order, `after` dependencies, PID dispatch and deadlines
// (SPEC §1, §6). Shutdown is in test_shutdown.cpp.

#include <doctest/doctest.h>

#include "daemon/core/supervisor.hpp"
#include "tests/unit/core/fake.hpp"

namespace pkit::core {
namespace {

using namespace test;
using Indices = std::vector<std::size_t>;
using Names = std::vector<std::string>;

TEST_CASE("start order honours after, then name order") {
    // Indices in name order: api 0, cache 1, db 2, web 3.
    Supervisor sup = supervisor(
        {spec_after("web", {"api"}), spec_after("api", {"db"}), spec("db"), spec("cache")});
    CHECK(sup.start_order() == Indices{1, 2, 0, 3});
    CHECK(sup.find("db") == 2);
    CHECK(sup.find("nope") == std::nullopt);

    SUBCASE("independent services in name order") {
        Supervisor plain = supervisor({spec("zeta"), spec("alpha"), spec("mid")});
        CHECK(plain.start_order() == Indices{0, 1, 2});
        plain.start(at(0));
        CHECK(take(plain) == "spawn 0 r1 | spawn 1 r1 | spawn 2 r1");
    }
}

TEST_CASE("a dependent waits until its dependency is running and ready") {
    Supervisor sup = supervisor(
        {spec_after("web", {"api"}), spec_after("api", {"db"}), spec("db"), spec("cache")});
    sup.start(at(0));
    CHECK(take(sup) == "spawn 1 r1 | spawn 2 r1");
    CHECK(sup.service(0).state() == State::waiting);
    CHECK(sup.service(3).state() == State::waiting);
    CHECK(sup.unsatisfied_dependencies(0) == Names{"db"});
    CHECK(sup.unsatisfied_dependencies(3) == Names{"api"});

    sup.on_spawned(1, 1, 101, at(0.1));
    CHECK(take(sup) == "started cache r1 pid 101");
    sup.on_spawned(2, 1, 102, at(0.1));
    CHECK(take(sup) == "started db r1 pid 102 | spawn 0 r1");
    CHECK(sup.unsatisfied_dependencies(0).empty());
    sup.on_spawned(0, 1, 100, at(0.2));
    CHECK(take(sup) == "started api r1 pid 100 | spawn 3 r1");
}

TEST_CASE("a dependency in backoff holds its dependent back") {
    Supervisor sup = supervisor({spec_after("app", {"db"}), spec("db")});
    sup.start(at(0));
    sup.on_launch_failed(1, 1, LaunchFailure{config::LaunchError::not_found, "not_found: db"},
                         at(0));
    CHECK(take(sup) ==
          "spawn 1 r1 | exited db r1 launch_error not_found | "
          "restarting db r1 in 200ms #1");
    CHECK(sup.service(0).state() == State::waiting);
    sup.on_time(at(0.2));
    CHECK(take(sup) == "spawn 1 r2");
    sup.on_spawned(1, 2, 101, at(0.2));
    CHECK(take(sup) == "started db r2 pid 101 | spawn 0 r1");
}

TEST_CASE("a dependency that ended done satisfies after; one that failed does not") {
    config::ServiceSpec app = spec_after("app", {"migrate"});
    app.autostart = false;
    config::ServiceSpec migrate = spec("migrate");
    migrate.restart.max_restarts = 0;
    Supervisor sup = supervisor({app, migrate});  // app 0, migrate 1
    sup.start(at(0));
    CHECK(take(sup) == "spawn 1 r1");
    sup.on_spawned(1, 1, 101, at(0));
    sup.take_actions();
    SUBCASE("done") {
        sup.on_exit(101, exited(0), at(1));
        REQUIRE(sup.service(1).state() == State::done);
        sup.take_actions();
        sup.start_service(0, at(2));
        CHECK(take(sup) == "spawn 0 r1");
    }
    SUBCASE("failed") {
        sup.on_exit(101, exited(1), at(1));
        REQUIRE(sup.service(1).state() == State::failed);
        sup.take_actions();
        sup.start_service(0, at(2));
        CHECK(take(sup) == "");
        CHECK(sup.service(0).state() == State::waiting);
        CHECK(sup.unsatisfied_dependencies(0) == Names{"migrate"});
        sup.on_time(at(100));
        CHECK(take(sup) == "");
        CHECK(sup.service(0).state() == State::waiting);
    }
}

TEST_CASE("a dependent of a dependency that failed at once stays waiting") {
    config::ServiceSpec db = spec("db");
    db.restart.max_restarts = 0;
    Supervisor sup = supervisor({spec_after("app", {"db"}), db});
    sup.start(at(0));
    sup.on_launch_failed(1, 1, LaunchFailure{config::LaunchError::bad_cwd, "bad_cwd: /nope"},
                         at(0));
    CHECK(take(sup) ==
          "spawn 1 r1 | exited db r1 launch_error bad_cwd | "
          "restarts_exhausted db r1");
    CHECK(sup.service(0).state() == State::waiting);
    CHECK(sup.next_deadline() == std::nullopt);
}

TEST_CASE("operator stop of a service waiting for its dependency keeps it from starting") {
    Supervisor sup = supervisor({spec_after("app", {"db"}), spec("db")});
    sup.start(at(0));
    sup.take_actions();
    sup.stop_service(0, at(0.1));
    CHECK(take(sup) == "stopped app r0");
    sup.on_spawned(1, 1, 101, at(0.2));
    CHECK(take(sup) == "started db r1 pid 101");
    CHECK(sup.service(0).state() == State::stopped);
    sup.start_service(0, at(1));
    CHECK(take(sup) == "spawn 0 r1");
}

TEST_CASE("group members start in member order and their events name the group") {
    config::DaemonSpec daemon;
    daemon.groups.push_back(config::GroupSpec{.name = "backend", .members = {"web", "db"}});
    Supervisor sup = supervisor({spec("db"), spec("web"), spec("solo")}, daemon);
    // Indices: db 0, solo 1, web 2.
    CHECK(sup.start_order() == Indices{1, 2, 0});
    CHECK(sup.service(0).group() == "backend");
    CHECK(sup.service(2).group() == "backend");
    CHECK(sup.service(1).group() == std::nullopt);
    sup.start(at(0));
    CHECK(take(sup) == "spawn 1 r1 | spawn 2 r1");
    sup.on_spawned(2, 1, 102, at(0));
    CHECK(take(sup) == "started web [backend] r1 pid 102 | spawn 0 r1");
    sup.on_spawned(1, 1, 101, at(0));
    CHECK(take(sup) == "started solo r1 pid 101");
}

TEST_CASE("an exit for a PID that is no run of ours is an orphan") {
    Supervisor sup = supervisor({spec("web")});
    sup.start(at(0));
    sup.on_spawned(0, 1, 100, at(0));
    sup.take_actions();
    CHECK_FALSE(sup.on_exit(4242, exited(0), at(1)));
    CHECK(take(sup) == "");
    CHECK(sup.service(0).state() == State::running);
    CHECK(sup.on_exit(100, exited(1), at(1)));
    sup.take_actions();
    CHECK_FALSE(sup.on_exit(100, exited(1), at(1)));  // reaped once already
    CHECK(take(sup) == "");
    CHECK(sup.service(0).restarts() == 1);
}

TEST_CASE("next_deadline is the earliest deadline of all services and the shutdown") {
    config::ServiceSpec a = spec("a");
    a.timeout = 10s;
    config::DaemonSpec daemon;
    daemon.shutdown_timeout = 2s;
    Supervisor sup = supervisor({a, spec("b")}, daemon);
    sup.start(at(0));
    sup.on_spawned(0, 1, 100, at(0));
    sup.on_spawned(1, 1, 101, at(0));
    CHECK(seconds(sup.next_deadline()) == 10.0);
    sup.on_exit(101, exited(1), at(1));
    CHECK(seconds(sup.next_deadline()) == 1.2);
    sup.on_time(at(1.2));
    sup.on_spawned(1, 2, 102, at(1.2));
    CHECK(seconds(sup.next_deadline()) == 10.0);
    sup.shutdown(at(5));
    CHECK(seconds(sup.next_deadline()) == 7.0);  // shutdown_timeout caps stop.timeout
}

}  // namespace
}  // namespace pkit::core
