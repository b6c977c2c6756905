// Reload in the core (SPEC §8): added services start, removed ones stop and leave
// start_order/find, changed ones restart with fresh counters while `run` keeps
// counting, unchanged ones keep their run and counters.

#include <doctest/doctest.h>

#include "daemon/core/supervisor.hpp"
#include "tests/unit/core/fake.hpp"

namespace pkit::core {
namespace {

using namespace test;
using Indices = std::vector<std::size_t>;
using Names = std::vector<std::string>;

config::ServiceSpec with_command(std::string name, std::string arg) {
    config::ServiceSpec s = spec(std::move(name));
    s.command = {"/bin/sleep", std::move(arg)};
    return s;
}

// change (0), keep (1), remove (2), all running; change and keep crashed once at
// t=1 and run again: pids change 200, keep 201, remove 102.
Supervisor three_running() {
    Supervisor sup = supervisor(
        {with_command("change", "1"), with_command("keep", "1"), with_command("remove", "1")});
    sup.start(at(0));
    for (std::size_t i = 0; i < 3; ++i) {
        sup.on_spawned(i, 1, 100 + static_cast<pid_t>(i), at(0));
    }
    sup.on_exit(100, exited(1), at(1));
    sup.on_exit(101, exited(1), at(1));
    sup.on_time(at(1.2));
    sup.on_spawned(0, 2, 200, at(1.2));
    sup.on_spawned(1, 2, 201, at(1.2));
    sup.take_actions();
    return sup;
}

// The three files with `change`'s command 1 or 2.
config::Tree three_files(const char* change) {
    return tree(
        {with_command("keep", "1"), with_command("change", change), with_command("remove", "1")});
}

// three_running(), then reloaded with `change`'s command 2: its old run is stopping.
Supervisor change_waiting() {
    Supervisor sup = three_running();
    sup.reload(three_files("2"), at(5));
    sup.take_actions();
    REQUIRE(sup.service(0).state() == State::stopping);
    return sup;
}

TEST_CASE("reload reports added, removed, changed and unchanged services") {
    Supervisor sup = three_running();
    ReloadOutcome outcome = sup.reload(
        tree({with_command("keep", "1"), with_command("change", "2"), with_command("add", "1")}),
        at(5));
    CHECK(outcome.added == Names{"add"});
    CHECK(outcome.removed == Names{"remove"});
    CHECK(outcome.changed == Names{"change"});
    CHECK(outcome.unchanged == 1);
    CHECK(take(sup) ==
          "signal 0 r2 pid 200 TERM group +cont | signal 2 r1 pid 102 TERM group +cont | "
          "reload  r0 | spawn 3 r1");
    // The removed slot is retired: gone from find and start_order, its index kept.
    CHECK(sup.size() == 4);
    CHECK(sup.retired(2));
    CHECK(sup.find("remove") == std::nullopt);
    CHECK(sup.find("add") == 3);
    CHECK(sup.start_order() == Indices{3, 0, 1});
}

TEST_CASE("reload restarts a changed service with fresh counters and run still counting") {
    Supervisor sup = change_waiting();
    sup.on_exit(200, killed(SIGTERM), at(5.1));
    CHECK(take(sup) ==
          "exited change r2 signal TERM by operator | cleanup 0 pgid 200 TERM grace 5000ms | "
          "stopped change r2 | spawn 0 r3");
    sup.on_spawned(0, 3, 300, at(5.1));
    const Service& change = sup.service(0);
    CHECK(change.run() == 3);
    CHECK(change.restarts() == 0);
    CHECK(change.spec().command == std::vector<std::string>{"/bin/sleep", "2"});
    CHECK(change.state() == State::running);
    // The unchanged one was not touched.
    const Service& keep = sup.service(1);
    CHECK(keep.pid() == 201);
    CHECK(keep.run() == 2);
    CHECK(keep.restarts() == 1);
    CHECK(keep.state() == State::running);
}

TEST_CASE("a file put back while its change waits for the old run runs as put back") {
    // The second reload is compared with the definition that waits, not the running
    // one it equals: else the change it undid would still be applied.
    Supervisor sup = change_waiting();
    ReloadOutcome outcome = sup.reload(three_files("1"), at(5.05));
    CHECK(outcome.changed == Names{"change"});
    CHECK(outcome.unchanged == 2);
    sup.on_exit(200, killed(SIGTERM), at(5.1));
    sup.take_actions();
    CHECK(sup.service(0).spec().command == std::vector<std::string>{"/bin/sleep", "1"});
    // Reloaded once more, unchanged: the definition now running is the one compared.
    outcome = sup.reload(three_files("1"), at(6));
    CHECK(outcome.unchanged == 3);
}

TEST_CASE("reload of an identical tree touches nothing") {
    Supervisor sup = three_running();
    ReloadOutcome outcome = sup.reload(three_files("1"), at(5));
    CHECK(outcome.added.empty());
    CHECK(outcome.removed.empty());
    CHECK(outcome.changed.empty());
    CHECK(outcome.unchanged == 3);
    CHECK(take(sup) == "reload  r0");
    CHECK(sup.service(0).pid() == 200);
    CHECK(sup.service(0).restarts() == 1);
    CHECK(sup.start_order() == Indices{0, 1, 2});
}

TEST_CASE("reload tells an unchanged service by its parse, and an equal one takes the new parse") {
    // config::ParseStamp: two specs of one name with the same number hold the same
    // values, so the second is not compared key by key.
    auto stamped = [](const char* arg, std::uint64_t number) {
        config::ServiceSpec s = with_command("web", arg);
        s.stamp.number = number;
        return s;
    };
    Supervisor sup = supervisor({stamped("1", 7)});
    sup.start(at(0));
    sup.on_spawned(0, 1, 100, at(0));
    take(sup);
    // Equal values from another parse: unchanged, and that parse's from now on.
    ReloadOutcome outcome = sup.reload(tree({stamped("1", 8)}), at(1));
    CHECK(outcome.unchanged == 1);
    CHECK(sup.service(0).spec().stamp.number == 8);
    // The same parse is taken on its word: these values are never compared.
    outcome = sup.reload(tree({stamped("2", 8)}), at(2));
    CHECK(outcome.unchanged == 1);
    CHECK(sup.service(0).spec().command.at(1) == "1");
    // No parse known (0): the values decide.
    outcome = sup.reload(tree({stamped("2", 0)}), at(3));
    CHECK(outcome.changed == Names{"web"});
}

TEST_CASE("reload finds each service whatever order its slots are in") {
    // Slots in the order services came: the slot after the last one found is tried
    // first, then the index of names. Here slot 0 is a retired "a", slot 2 the live one.
    Supervisor sup = supervisor({with_command("a", "1"), with_command("m", "1")});
    sup.start(at(0));
    sup.reload(tree({with_command("m", "1")}), at(1));
    sup.reload(tree({with_command("a", "1"), with_command("m", "1"), with_command("z", "1")}),
               at(2));
    take(sup);
    REQUIRE(sup.find("a") == 2);
    ReloadOutcome outcome = sup.reload(
        tree({with_command("a", "1"), with_command("m", "1"), with_command("z", "2")}), at(3));
    CHECK(outcome.added.empty());
    CHECK(outcome.removed.empty());
    CHECK(outcome.changed == Names{"z"});
    CHECK(outcome.unchanged == 2);
    CHECK(sup.find("a") == 2);
}

TEST_CASE("a removed service's exit is still handled and it never comes back") {
    Supervisor sup = three_running();
    sup.reload(tree({with_command("keep", "1"), with_command("change", "1")}), at(5));
    sup.take_actions();
    CHECK(sup.service_of(102) == 2);
    CHECK(sup.on_exit(102, exited(0), at(5.1)));
    CHECK(take(sup) ==
          "exited remove r1 code 0 by operator | cleanup 2 pgid 102 TERM grace 5000ms | "
          "stopped remove r1");
    CHECK(sup.service(2).state() == State::stopped);
    sup.on_time(at(100));
    CHECK(take(sup) == "");
    // A shutdown does not wait for it and exits once the live ones are down.
    sup.shutdown(at(101));
    sup.on_exit(200, killed(SIGTERM), at(101.1));
    sup.on_exit(201, killed(SIGTERM), at(101.1));
    CHECK(only<ExitAction>(sup.take_actions()).size() == 1);
}

TEST_CASE("reload while a changed service is in backoff starts the new definition at once") {
    config::ServiceSpec svc = with_command("svc", "1");
    svc.restart.backoff_initial = 10s;
    svc.restart.max_backoff = 10s;
    Supervisor sup = supervisor({svc});
    sup.start(at(0));
    sup.on_spawned(0, 1, 100, at(0));
    sup.on_exit(100, exited(1), at(1));
    sup.take_actions();
    REQUIRE(sup.service(0).state() == State::backoff);
    REQUIRE(sup.service(0).restarts() == 1);

    config::ServiceSpec changed = svc;
    changed.command = {"/bin/sleep", "2"};
    ReloadOutcome outcome = sup.reload(tree({changed}), at(2));
    CHECK(outcome.changed == Names{"svc"});
    CHECK(take(sup) == "stopped svc r1 | reload  r0 | spawn 0 r2");
    CHECK(sup.service(0).restarts() == 0);
    CHECK(sup.service(0).restart_at() == std::nullopt);
    sup.on_spawned(0, 2, 200, at(2));
    sup.take_actions();
    sup.on_time(at(11));  // the old backoff's deadline means nothing now
    CHECK(take(sup) == "");
    CHECK(sup.service(0).pid() == 200);
}

TEST_CASE("reload removing a service in backoff stops it at once") {
    Supervisor sup = supervisor({with_command("gone", "1"), with_command("stay", "1")});
    sup.start(at(0));
    sup.on_spawned(0, 1, 100, at(0));
    sup.on_spawned(1, 1, 101, at(0));
    sup.on_exit(100, exited(1), at(1));
    sup.take_actions();
    ReloadOutcome outcome = sup.reload(tree({with_command("stay", "1")}), at(1.1));
    CHECK(outcome.removed == Names{"gone"});
    CHECK(take(sup) == "stopped gone r1 | reload  r0");
    sup.on_time(at(1.2));
    CHECK(take(sup) == "");
    CHECK(sup.start_order() == Indices{1});
}

TEST_CASE("reload of a changed output pattern replaces the spec: the new pattern judges") {
    // A pattern compares by its source, which lives in its compiled program: a reload
    // keeping the old spec, or calling the two patterns equal, would leave "^OLD" in force.
    config::ServiceSpec old_spec = with_command("watch", "1");
    old_spec.stop_when.edit().output_matches = pattern("^OLD");
    Supervisor sup = supervisor({old_spec});
    sup.start(at(0));
    sup.on_spawned(0, 1, 100, at(0));
    sup.take_actions();

    config::ServiceSpec new_spec = old_spec;
    new_spec.stop_when.edit().output_matches = pattern("^NEW");
    ReloadOutcome outcome = sup.reload(tree({new_spec}), at(1));
    CHECK(outcome.changed == Names{"watch"});
    sup.on_exit(100, killed(SIGTERM), at(1.1));
    sup.on_spawned(0, 2, 200, at(1.1));
    sup.take_actions();
    REQUIRE(sup.service(0).state() == State::running);
    CHECK(sup.service(0).spec().stop_when->output_matches->source() == "^NEW");

    sup.on_output(0, 2, Stream::stdout_, "OLD news", 1001.2);
    sup.on_exit(200, exited(1), at(1.2));
    CHECK(sup.service(0).state() == State::backoff);  // the old pattern no longer stops it
    sup.on_time(at(5));
    sup.on_spawned(0, 3, 300, at(5));
    sup.on_output(0, 3, Stream::stdout_, "NEW news", 1005.1);
    sup.on_exit(300, exited(1), at(5.1));
    CHECK(sup.service(0).state() == State::failed);
    CHECK(sup.service(0).stopped_reason() == StopReason::predicate);
}

}  // namespace
}  // namespace pkit::core

namespace pkit::core {
namespace {

config::ServiceSpec with_log_file(config::ServiceSpec s, std::string path) {
    config::LogFileKeys keys;
    keys.path = std::move(path);
    s.output.log = keys;
    return s;
}

}  // namespace

TEST_CASE("reload that changes only the log file keys keeps the run (SPEC §18)") {
    Supervisor sup = three_running();
    ReloadOutcome outcome =
        sup.reload(tree({with_command("keep", "1"),
                         with_log_file(with_command("change", "1"), "/var/log/change.log"),
                         with_command("remove", "1")}),
                   at(5));
    CHECK(outcome.changed == Names{"change"});
    // No stop of run 2 of `change`: only the event.
    CHECK(take(sup) == "reload  r0");
    CHECK(sup.service(0).state() == State::running);
    CHECK(sup.service(0).pid() == 200);
    CHECK(sup.service(0).spec().output.log->path == "/var/log/change.log");
    ReloadPreview preview = sup.preview_reload(tree(
        {with_command("keep", "1"), with_command("change", "1"), with_command("remove", "1")}));
    REQUIRE(preview.changed.size() == 1);
    CHECK(preview.changed[0].effect == ReloadEffect::replace);
    // A log key and another key: a restart as before.
    sup.reload(
        tree({with_command("keep", "1"), with_command("change", "2"), with_command("remove", "1")}),
        at(6));
    CHECK(sup.service(0).state() == State::stopping);
}

}  // namespace pkit::core
