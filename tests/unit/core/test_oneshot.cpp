// One-shot jobs (SPEC §2 `type`, §6) and the `wait` verdicts (SPEC §9): a running job
// is not ready, a done one satisfies `after`, a failed one holds its dependents back.

#include <doctest/doctest.h>

#include "daemon/core/explain.hpp"
#include "daemon/core/service.hpp"
#include "daemon/core/wait.hpp"
#include "tests/unit/core/fake.hpp"

namespace pkit::core {
namespace {

using namespace test;

config::ServiceSpec job(std::string name) {
    config::ServiceSpec s = spec(std::move(name));
    s.type = config::ServiceType::oneshot;
    return s;
}

TEST_CASE("a oneshot run is running but not ready, and done after a clean exit") {
    Driver d(job("migrate"));
    d.start(at(0));
    CHECK(d.take() == "spawn 0 r1 | started migrate r1 pid 100");
    CHECK(d.svc.state() == State::running);
    CHECK_FALSE(d.svc.ready());
    CHECK_FALSE(d.svc.satisfies_dependents());

    d.exit(at(2), exited(0));
    CHECK(d.svc.state() == State::done);
    CHECK(d.svc.satisfies_dependents());
}

TEST_CASE("a crashed oneshot is retried with backoff under on_crash") {
    Driver d(job("migrate"));
    d.start(at(0));
    d.exit(at(1), exited(1));
    CHECK(d.svc.state() == State::backoff);
    CHECK_FALSE(d.svc.satisfies_dependents());
    d.after_backoff(at(1.2));
    CHECK(d.svc.state() == State::running);
    CHECK_FALSE(d.svc.ready());
    d.exit(at(2), exited(0));
    CHECK(d.svc.state() == State::done);
}

TEST_CASE("a oneshot's dependent starts only after the job is done") {
    // Indices in name order: migrate 0, web 1.
    Supervisor sup = supervisor({job("migrate"), spec_after("web", {"migrate"})});
    sup.start(at(0));
    CHECK(take(sup) == "spawn 0 r1");
    sup.on_spawned(0, 1, 100, at(0));
    CHECK(take(sup) == "started migrate r1 pid 100");
    CHECK(sup.service(1).state() == State::waiting);
    CHECK(sup.unsatisfied_dependencies(1) == std::vector<std::string>{"migrate"});
    Explanation e = explain(sup, 1, at(12.4));
    CHECK(e.text == "waiting for migrate to finish (running for 12 s) before run 1.");

    sup.on_exit(100, exited(0), at(13));
    std::string trace = take(sup);
    CHECK(trace.find("exited migrate r1 code 0") != std::string::npos);
    CHECK(trace.find("spawn 1 r1") != std::string::npos);
    CHECK(trace.find("exited migrate") < trace.find("spawn 1 r1"));
}

TEST_CASE("a failed oneshot leaves its dependent waiting until a start succeeds") {
    config::ServiceSpec migrate = job("migrate");
    migrate.restart.max_restarts = 0;
    Supervisor sup = supervisor({migrate, spec_after("web", {"migrate"})});
    sup.start(at(0));
    sup.on_spawned(0, 1, 100, at(0));
    sup.on_exit(100, exited(1), at(1));
    sup.take_actions();
    CHECK(sup.service(0).state() == State::failed);
    CHECK(sup.service(1).state() == State::waiting);
    CHECK(explain(sup, 1, at(2)).text ==
          "waiting for migrate, which failed (`pkitctl start migrate` runs it again) before "
          "run 1.");

    sup.start_service(0, at(3));
    CHECK(take(sup) == "spawn 0 r2");
    sup.on_spawned(0, 2, 101, at(3));
    sup.on_exit(101, exited(0), at(4));
    CHECK(take(sup).find("spawn 1 r1") != std::string::npos);
}

TEST_CASE("wait verdicts for ready, done and stopped") {
    Driver svc(spec("web"));
    CHECK(check_wait(svc.svc, WaitFor::ready).verdict == WaitVerdict::unreachable);  // stopped
    CHECK(check_wait(svc.svc, WaitFor::stopped).verdict == WaitVerdict::reached);
    svc.start(at(0));
    CHECK(check_wait(svc.svc, WaitFor::ready).verdict == WaitVerdict::reached);
    CHECK(check_wait(svc.svc, WaitFor::done).verdict == WaitVerdict::pending);
    CHECK(check_wait(svc.svc, WaitFor::stopped).verdict == WaitVerdict::pending);

    Driver j(job("migrate"));
    j.start(at(0));
    CHECK(check_wait(j.svc, WaitFor::ready).verdict == WaitVerdict::pending);
    SUBCASE("done reaches ready and done") {
        j.exit(at(1), exited(0));
        CHECK(check_wait(j.svc, WaitFor::ready).verdict == WaitVerdict::reached);
        CHECK(check_wait(j.svc, WaitFor::done).verdict == WaitVerdict::reached);
        CHECK(check_wait(j.svc, WaitFor::stopped).verdict == WaitVerdict::reached);
    }
    SUBCASE("failed can reach neither ready nor done, and says why") {
        j.svc.replace_spec(
            [] {
                config::ServiceSpec s = job("migrate");
                s.restart.max_restarts = 0;
                return s;
            }(),
            std::nullopt);
        j.exit(at(1), exited(3));
        REQUIRE(j.svc.state() == State::failed);
        WaitCheck check = check_wait(j.svc, WaitFor::done);
        CHECK(check.verdict == WaitVerdict::unreachable);
        CHECK(check.reason.rfind("migrate is failed (restarts_exhausted)", 0) == 0);
        CHECK(check_wait(j.svc, WaitFor::ready).verdict == WaitVerdict::unreachable);
        CHECK(check_wait(j.svc, WaitFor::stopped).verdict == WaitVerdict::reached);
    }
    SUBCASE("a backoff is still pending") {
        j.exit(at(1), exited(1));
        REQUIRE(j.svc.state() == State::backoff);
        CHECK(check_wait(j.svc, WaitFor::done).verdict == WaitVerdict::pending);
    }
}

}  // namespace
}  // namespace pkit::core
