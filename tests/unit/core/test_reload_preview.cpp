// Supervisor::preview_reload (SPEC §21, reload --dry-run): the outcome reload() would
// have, each changed service with its keys and what would become of its run, and no
// change at all; and the start_first replacements a reload begins, which `reload`
// waits for.

#include <doctest/doctest.h>

#include "daemon/core/supervisor.hpp"
#include "tests/unit/core/fake.hpp"

namespace pkit::core {
namespace {

using namespace test;

config::ServiceSpec with_command(config::ServiceSpec s, std::string command) {
    s.command = {std::move(command)};
    return s;
}

config::ServiceSpec start_first(std::string name) {
    config::ServiceSpec s = spec(std::move(name));
    s.restart.order = config::RestartOrder::start_first;
    return s;
}

config::ServiceSpec job(std::string name, std::string schedule) {
    config::ServiceSpec s = spec(std::move(name));
    s.type = config::ServiceType::oneshot;
    s.schedule = config::parse_schedule(schedule).value();
    return s;
}

// Every service of `services` launched and running (pid 100 + its index), no ready
// check: ready at once.
Supervisor running(std::vector<config::ServiceSpec> services) {
    Supervisor sup = supervisor(std::move(services));
    sup.start(at(0));
    for (std::size_t i = 0; i < sup.size(); ++i) {
        if (sup.service(i).launch_in_flight()) {
            sup.on_spawned(i, 1, static_cast<pid_t>(100 + i), at(0.1));
        }
    }
    sup.take_actions();
    return sup;
}

const ChangedService* changed(const ReloadPreview& p, std::string_view name) {
    for (const ChangedService& c : p.changed) {
        if (c.name == name) {
            return &c;
        }
    }
    return nullptr;
}

}  // namespace

TEST_CASE("the preview lists what reload would add, remove and change, and changes nothing") {
    Supervisor sup = running({spec("keep"), spec("change"), spec("gone")});
    const std::size_t change = *sup.find("change");
    const std::string before = sup.service(change).spec().command.front();
    config::Tree next = tree({spec("keep"), with_command(spec("change"), "/bin/new"), spec("new")});

    ReloadPreview preview = sup.preview_reload(next);
    CHECK(preview.added == std::vector<std::string>{"new"});
    CHECK(preview.removed == std::vector<std::string>{"gone"});
    CHECK(preview.unchanged == 1);
    REQUIRE(preview.changed.size() == 1);
    CHECK(preview.changed[0].name == "change");
    CHECK(preview.changed[0].effect == ReloadEffect::restart);
    CHECK(preview.changed[0].keys ==
          std::vector<config::KeyChange>{{"command", "[\"/bin/false\"]", "[\"/bin/new\"]"}});
    // Nothing happened: no action, the same definitions and services.
    CHECK(sup.take_actions().empty());
    CHECK(sup.size() == 3);
    CHECK(sup.service(change).spec().command.front() == before);

    // And reload() agrees with it.
    ReloadOutcome outcome = sup.reload(next, at(1));
    CHECK(outcome.added == preview.added);
    CHECK(outcome.removed == preview.removed);
    CHECK(outcome.changed == std::vector<std::string>{"change"});
    CHECK(outcome.unchanged == preview.unchanged);
}

TEST_CASE("the preview tells what would become of each changed service's run") {
    Supervisor sup = running(
        {spec("plain"), start_first("sf"), spec("stopped"), job("job", "0 3 * * *"), spec("off")});
    const std::size_t index = *sup.find("stopped");
    sup.stop_service(index, at(1));
    sup.on_exit(sup.service(index).pid(), killed(SIGTERM), at(1.1));
    sup.take_actions();
    REQUIRE(sup.service(index).state() == State::stopped);

    config::ServiceSpec off = with_command(spec("off"), "/bin/off");
    off.autostart = false;
    config::ServiceSpec stopped_off = with_command(spec("stopped"), "/bin/x");
    config::Tree next =
        tree({with_command(spec("plain"), "/bin/x"), with_command(start_first("sf"), "/bin/x"),
              stopped_off, job("job", "15 3 * * *"), off});
    ReloadPreview preview = sup.preview_reload(next);
    CHECK(changed(preview, "plain")->effect == ReloadEffect::restart);
    CHECK(changed(preview, "sf")->effect == ReloadEffect::start_first);
    CHECK(changed(preview, "stopped")->effect == ReloadEffect::start);
    CHECK(changed(preview, "job")->effect == ReloadEffect::rearm);
    CHECK(changed(preview, "job")->keys ==
          std::vector<config::KeyChange>{{"schedule", "\"0 3 * * *\"", "\"15 3 * * *\""}});
    CHECK(changed(preview, "off")->effect == ReloadEffect::stop);
    CHECK(sup.take_actions().empty());

    // A service that is not running and would not start.
    stopped_off.autostart = false;
    CHECK(changed(sup.preview_reload(tree({stopped_off})), "stopped")->effect ==
          ReloadEffect::replace);
}

TEST_CASE("a group's change changes its members, with the group's keys") {
    Supervisor sup = running({spec("a"), spec("b")});
    config::Tree next = tree({spec("a"), spec("b")});
    next.daemon.groups.push_back(config::GroupSpec{.name = "g", .members = {"a"}});
    ReloadPreview preview = sup.preview_reload(next);
    REQUIRE(preview.changed.size() == 1);
    CHECK(preview.changed[0].name == "a");
    CHECK(preview.changed[0].effect == ReloadEffect::restart);
    CHECK(preview.changed[0].keys ==
          std::vector<config::KeyChange>{{"group", std::nullopt, "\"g\""}});
    CHECK(preview.unchanged == 1);
}

TEST_CASE("reload names the start_first replacements it began, with the runs they replace") {
    Supervisor sup = running({start_first("sf"), spec("plain")});
    ReloadOutcome outcome = sup.reload(
        tree({with_command(start_first("sf"), "/bin/x"), with_command(spec("plain"), "/bin/x")}),
        at(5));
    REQUIRE(outcome.replacements.size() == 1);
    CHECK(outcome.replacements[0].service == *sup.find("sf"));
    CHECK(outcome.replacements[0].old_run == 1);
    const Replacement* r = sup.service(*sup.find("sf")).replacement();
    REQUIRE(r != nullptr);
    CHECK(r->old_run == 1);
    CHECK_FALSE(r->done);
}

}  // namespace pkit::core
