// explain's definition facts (add_definition_facts): what `pkitctl show` prints as the
// service's command, cwd, user, after, restart window and probes, from the spec pkitd runs.

#include <doctest/doctest.h>

#include <map>

#include "daemon/core/explain.hpp"

using namespace pkit;
using namespace std::chrono_literals;

namespace {

std::map<std::string, core::FactValue> facts_of(const config::ServiceSpec& spec) {
    std::vector<std::pair<std::string, core::FactValue>> facts;
    core::add_definition_facts(spec, facts);
    return {facts.begin(), facts.end()};
}

}  // namespace

TEST_CASE("explain definition facts: a plain service has nulls where nothing is set") {
    config::ServiceSpec spec;
    spec.command = {"/usr/bin/web", "--port", "8080"};
    auto facts = facts_of(spec);
    CHECK(std::get<std::string>(facts["command"]) == "/usr/bin/web --port 8080");
    for (auto key : {"cwd", "user", "unix_group", "after", "liveness", "readiness"}) {
        CHECK_MESSAGE(std::holds_alternative<std::nullptr_t>(facts[key]), key);
    }
    CHECK(std::get<std::string>(facts["policy"]) == "on_crash");
    CHECK(std::get<double>(facts["within"]) == 0.0);
}

TEST_CASE("explain definition facts: quoting, principals, after, window and probes in words") {
    config::ServiceSpec spec;
    spec.command = {"/bin/sh", "-c", "echo it's on; exec sleep 1"};
    spec.process.edit().cwd = "/srv/web";
    spec.process.edit().user.name = "www";
    spec.process.edit().group.id = 33;
    spec.after = {"db", "cache"};
    spec.restart.policy = config::RestartPolicy::always;
    spec.restart.within = 60s;
    spec.health.edit().kind = config::ProbeKind::tcp;
    spec.health.edit().target = "127.0.0.1:8080";
    spec.health.edit().interval = 10s;
    spec.ready.edit().notify = true;
    auto facts = facts_of(spec);
    CHECK(std::get<std::string>(facts["command"]) == "/bin/sh -c 'echo it'\\''s on; exec sleep 1'");
    CHECK(std::get<std::string>(facts["cwd"]) == "/srv/web");
    CHECK(std::get<std::string>(facts["user"]) == "www");
    CHECK(std::get<std::string>(facts["unix_group"]) == "33");
    CHECK(std::get<std::string>(facts["after"]) == "db, cache");
    CHECK(std::get<std::string>(facts["policy"]) == "always");
    CHECK(std::get<double>(facts["within"]) == 60.0);
    CHECK(std::get<std::string>(facts["liveness"]) ==
          "tcp 127.0.0.1:8080 every 10s, timeout 1s, 3 failures");
    CHECK(std::get<std::string>(facts["readiness"]) == "notify, within 30s");

    spec.ready.edit().notify = false;
    spec.ready.edit().probe.kind = config::ProbeKind::exec;
    spec.ready.edit().probe.argv = {"test", "-e", "/run/web.ready"};
    spec.ready.edit().probe.interval = 200ms;
    CHECK(std::get<std::string>(facts_of(spec)["readiness"]) ==
          "exec test -e /run/web.ready every 200ms, timeout 1s, within 30s");
    spec.health = {};
    spec.health.edit().kind = config::ProbeKind::watchdog;
    spec.health.edit().watchdog = 5s;
    CHECK(std::get<std::string>(facts_of(spec)["liveness"]) == "watchdog 5s");
}
