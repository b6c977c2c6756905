// The upgrade's state file (SPEC §16): the core's state written and read back into a
// supervisor built from the same configuration, and the reader's strictness.

#include <doctest/doctest.h>

#include <csignal>
#include <limits>

#include "daemon/core/persist.hpp"
#include "daemon/shell/upgrade/state_file.hpp"
#include "tests/unit/core/fake.hpp"

namespace pkit::shell::upgrade {
namespace {

using namespace core::test;
using nlohmann::json;

// A document as the next pkitd reads it.
proto::JsonTree tree_of(const std::string& text) {
    auto tree = proto::JsonTree::parse(text);
    REQUIRE_MESSAGE(tree.has_value(), tree.error());
    return std::move(*tree);
}
proto::JsonTree tree_of(const json& doc) {
    return tree_of(doc.dump());
}

// Four services in four states at t = 5 s: `api` running with two output lines, `db`
// in backoff after a failed launch, `job` stopped by the operator after a crash, and
// `web` failed for good (no restarts allowed) after an OOM kill.
core::Supervisor four_states() {
    config::ServiceSpec api = spec("api");
    config::ServiceSpec db = spec("db");
    db.restart.backoff_initial = std::chrono::seconds(3);
    config::ServiceSpec web = spec("web");
    web.restart.max_restarts = 0;
    core::Supervisor sup = supervisor({api, db, spec("job"), web});
    sup.start(at(0));
    sup.on_spawned(0, 1, 100, at(0.1));
    sup.on_output(0, 1, core::Stream::stdout_, "listening on :80", 1000.2);
    sup.on_output(0, 1, core::Stream::stderr_, "warming up", 1000.3);
    sup.on_launch_failed(1, 1, core::LaunchFailure{config::LaunchError::not_found, "not_found: db"},
                         at(4));
    sup.on_spawned(2, 1, 102, at(0.1));
    CHECK(sup.on_exit(102, exited(3), at(1)));
    sup.stop_service(2, at(2));
    sup.on_spawned(3, 1, 103, at(0.1));
    core::ProcessExit oom = exited(1);
    oom.oom_killed = true;  // a process of web's run was OOM-killed (SPEC §15)
    CHECK(sup.on_exit(103, oom, at(2)));
    sup.take_actions();
    return sup;
}

core::Supervisor fresh() {
    config::ServiceSpec db = spec("db");
    db.restart.backoff_initial = std::chrono::seconds(3);
    config::ServiceSpec web = spec("web");
    web.restart.max_restarts = 0;
    return supervisor({spec("api"), db, spec("job"), web});
}

DaemonFacts facts() {
    DaemonFacts f;
    f.from_version = "0.4.0";
    f.started_wall = 1000.0;
    f.started_ns = -5'000'000'000;
    f.orphans_reaped = 7;
    f.fds = {{"control", 3, "", 0, "", ""}, {"stdout", 9, "api", 1, "half a li", ""}};
    f.scaled = {{"worker", 2, 4}};
    f.cgroup_runs = {{"api", 2'500'000, 3}, {"db", std::nullopt, std::nullopt}};
    return f;
}

// The file `worker` at `count` instances, worker@1 .. worker@count.
config::Tree worker_tree(unsigned count) {
    std::vector<config::ServiceSpec> services;
    for (unsigned k = 1; k <= count; ++k) {
        config::ServiceSpec s = spec("worker@" + std::to_string(k));
        s.file = "services/worker.toml";
        s.instance = k;
        services.push_back(std::move(s));
    }
    return core::test::tree(std::move(services));
}

TEST_CASE("the state read back gives every service the same state, counters and tails") {
    core::Supervisor before = four_states();
    const std::string doc = write_state(before, facts(), mono(5));
    // The text is JSON, as any reader sees it.
    REQUIRE_FALSE(json::parse(doc, nullptr, false).is_discarded());

    core::Supervisor after = fresh();
    REQUIRE(apply_state(tree_of(doc), after, mono(5.2)).has_value());
    after.resumed(at(5.2));
    for (std::size_t i = 0; i < before.size(); ++i) {
        const core::Service& a = before.service(i);
        const core::Service& b = after.service(i);
        CAPTURE(a.name());
        CHECK(b.state() == a.state());
        CHECK(b.pid() == a.pid());
        CHECK(b.run() == a.run());
        CHECK(b.restarts() == a.restarts());
        CHECK(b.crashes_counted() == a.crashes_counted());
        CHECK(b.restart_at() == a.restart_at());
        CHECK(b.started_at() == a.started_at());
        CHECK(b.stopped_reason() == a.stopped_reason());
        CHECK(b.last_decision().why == a.last_decision().why);
        REQUIRE(b.tail().size() == a.tail().size());
        for (std::size_t k = 0; k < a.tail().size(); ++k) {
            CHECK(b.tail().at(k).text == a.tail().at(k).text);
            CHECK(b.tail().at(k).stream == a.tail().at(k).stream);
            CHECK(b.tail().at(k).at == a.tail().at(k).at);
        }
        REQUIRE(b.last_exit().has_value() == a.last_exit().has_value());
        if (a.last_exit()) {
            CHECK(b.last_exit()->code == a.last_exit()->code);
            CHECK(b.last_exit()->duration == a.last_exit()->duration);
            CHECK(b.last_exit()->oom_killed == a.last_exit()->oom_killed);
        }
        CHECK(b.oom_kills() == a.oom_kills());
    }
    CHECK(after.service(0).state() == core::State::running);
    CHECK(after.service(1).state() == core::State::backoff);
    CHECK(after.service(2).state() == core::State::stopped);
    CHECK(after.service(3).state() == core::State::failed);
    CHECK(after.service(3).oom_kills() == 1);
    CHECK(after.service(3).last_exit()->oom_killed);
    // Written again, the restored state is the same document.
    CHECK(write_state(after, facts(), mono(5)) == doc);
    // Its members in another order (nlohmann sorts them) read the same.
    core::Supervisor sorted = fresh();
    REQUIRE(apply_state(tree_of(json::parse(doc)), sorted, mono(5.2)).has_value());
    sorted.resumed(at(5.2));
    CHECK(write_state(sorted, facts(), mono(5)) == doc);
    // The running run's pid is known again: its exit is a run's, not an orphan's.
    CHECK(after.service_of(100) == std::size_t{0});
    // The backoff ends when it would have: db's launch failed at 4 s, 3 s delay.
    CHECK(after.next_deadline() == mono(7));
    after.on_time(at(7));
    auto actions = after.take_actions();
    REQUIRE(!actions.empty());
    const auto* spawn = std::get_if<core::SpawnAction>(&actions.front());
    REQUIRE(spawn != nullptr);
    CHECK(spawn->service == 1);
    CHECK(spawn->run == 2);
}

TEST_CASE("the daemon's facts and kept descriptors are read back") {
    core::Supervisor sup = four_states();
    auto read = read_facts(tree_of(write_state(sup, facts(), mono(5))));
    REQUIRE(read.has_value());
    CHECK(read->from_version == "0.4.0");
    CHECK(read->orphans_reaped == 7);
    CHECK(read->started_ns == -5'000'000'000);
    REQUIRE(read->fds.size() == 2);
    CHECK(read->fds[1].role == "stdout");
    CHECK(read->fds[1].service == "api");
    CHECK(read->fds[1].fd == 9);
    CHECK(read->fds[1].pending == "half a li");
    REQUIRE(read->scaled.size() == 1);
    CHECK(read->scaled[0].file == "worker");
    CHECK(read->scaled[0].file_count == 2);
    CHECK(read->scaled[0].count == 4);
    // What api's run read from its cgroup at its start (SPEC §15), null where nothing was.
    REQUIRE(read->cgroup_runs.size() == 2);
    CHECK(read->cgroup_runs[0].service == "api");
    CHECK(read->cgroup_runs[0].usage_usec == 2'500'000U);
    CHECK(read->cgroup_runs[0].oom_kill == 3U);
    CHECK_FALSE(read->cgroup_runs[1].usage_usec.has_value());
    CHECK_FALSE(read->cgroup_runs[1].oom_kill.has_value());
}

// Two clients: one idle with half a request read, one whose wait is in flight with a
// reply cut in the middle of a character, bytes that are no UTF-8 and a newline.
std::vector<CarriedClient> two_clients() {
    CarriedClient idle;
    idle.connection = {12, true, false, false, "{\"id\":1,\"cmd\":", "", ""};
    CarriedClient waiting;
    waiting.connection = {13,
                          true,
                          false,
                          true,
                          std::string("\xff\x00\n{", 4),
                          "\x9c\x93 ok\n",
                          "{\"id\":2,\"cmd\":\"wait\",\"services\":[\"api\"]}"};
    waiting.waiting = CarriedWait::wait;
    waiting.services = {"api"};
    waiting.marks = {3};
    waiting.deadline_ns = 59'000'000'000;
    return {idle, waiting};
}

TEST_CASE("the client connections are handed over from version 3 on, byte for byte") {
    core::Supervisor sup = four_states();
    DaemonFacts f = facts();
    f.clients = two_clients();
    auto read = read_facts(tree_of(write_state(sup, f, mono(5))));
    REQUIRE_MESSAGE(read.has_value(), read.error());
    REQUIRE(read->clients.size() == 2);
    for (std::size_t k = 0; k < 2; ++k) {
        const CarriedClient& want = f.clients[k];
        const CarriedClient& got = read->clients[k];
        CHECK(got.connection.fd == want.connection.fd);
        CHECK(got.connection.served == want.connection.served);
        CHECK(got.connection.finishing == want.connection.finishing);
        CHECK(got.connection.eof == want.connection.eof);
        CHECK(got.connection.input == want.connection.input);
        CHECK(got.connection.output == want.connection.output);
        CHECK(got.connection.request == want.connection.request);
        CHECK(got.waiting == want.waiting);
        CHECK(got.services == want.services);
        CHECK(got.marks == want.marks);
        CHECK(got.deadline_ns == want.deadline_ns);
    }
    // To a pkitd that reads version 2 at most, no client goes.
    const std::string old = write_state(sup, f, mono(5), 2);
    CHECK(json::parse(old)["version"] == 2);
    CHECK_FALSE(json::parse(old).contains("clients"));
    auto read_old = read_facts(tree_of(old));
    REQUIRE_MESSAGE(read_old.has_value(), read_old.error());
    CHECK(read_old->clients.empty());
    core::Supervisor after = fresh();
    REQUIRE(apply_state(tree_of(old), after, mono(5.2)).has_value());
    CHECK(after.service(0).pid() == 100);
}

TEST_CASE("the reader refuses a client it cannot trust, naming the field") {
    core::Supervisor sup = four_states();
    DaemonFacts f = facts();
    f.clients = two_clients();
    const json good = json::parse(write_state(sup, f, mono(5)));
    auto refused = [&](const json& doc) {
        auto r = read_facts(tree_of(doc));
        REQUIRE_FALSE(r.has_value());
        return r.error();
    };
    json doc = good;
    doc["clients"][1]["input"] = "not hex";
    CHECK(refused(doc) == "clients.1.input: not hex");
    doc = good;
    doc["clients"][0]["fd"] = 1;
    CHECK(refused(doc) == "clients.0.fd: not an integer in range");
    doc = good;
    doc["clients"][1]["waiting"] = "forever";
    CHECK(refused(doc) == "clients.1.waiting: unknown");
    doc = good;
    doc["clients"][0]["waiting"] = "wait";
    CHECK(refused(doc) == "clients.0.waiting: does not go with the request");
    doc = good;
    doc["clients"][1]["marks"] = json::array();
    CHECK(refused(doc) == "clients.1.marks: not one for each service");
    doc = good;
    doc["clients"][1].erase("deadline");
    CHECK(refused(doc) == "clients.1.deadline: missing");
    doc = good;
    doc.erase("clients");
    CHECK(refused(doc) == "clients: not a list");
}

TEST_CASE("the counts scale set apply where the file's own count is still theirs") {
    config::Tree tree = worker_tree(2);
    std::vector<ScaledFact> scaled = {{"worker", 2, 4}, {"other", 2, 3}};
    auto applied = apply_scaled(scaled, tree);
    REQUIRE(applied.size() == 1);
    CHECK(applied[0].file == "worker");
    REQUIRE(tree.services.size() == 4);
    CHECK(tree.services[3].name == "worker@4");
    CHECK(tree.services[3].instance == 4);
    // The file says 3 now: the count made against 2 is not applied.
    config::Tree changed = worker_tree(3);
    CHECK(apply_scaled({{"worker", 2, 4}}, changed).empty());
    CHECK(changed.services.size() == 3);
    // Down to one instance, which keeps its name.
    config::Tree down = worker_tree(3);
    CHECK(apply_scaled({{"worker", 3, 1}}, down).size() == 1);
    REQUIRE(down.services.size() == 1);
    CHECK(down.services[0].name == "worker@1");
}

// One service with a run timeout of 10 s, its run paused at 2 s.
core::Supervisor paused_at_two() {
    config::ServiceSpec api = spec("api");
    api.timeout = std::chrono::seconds(10);
    core::Supervisor sup = supervisor({api});
    sup.start(at(0));
    sup.on_spawned(0, 1, 100, at(0));
    sup.pause_service(0, at(2));
    sup.take_actions();
    return sup;
}

TEST_CASE("a paused run is handed over paused, with what was left of its deadlines") {
    core::Supervisor before = paused_at_two();
    const std::string doc = write_state(before, facts(), mono(5));
    CHECK(json::parse(doc)["version"] == 4);
    CHECK(json::parse(doc)["core"]["services"]["api"]["paused"] == true);
    core::Supervisor after = [] {
        config::ServiceSpec api = spec("api");
        api.timeout = std::chrono::seconds(10);
        return supervisor({api});
    }();
    REQUIRE(apply_state(tree_of(doc), after, mono(5.2)).has_value());
    after.resumed(at(5.2));
    const core::Service& api = after.service(0);
    CHECK(api.state() == core::State::paused);
    CHECK(api.pid() == 100);
    REQUIRE(api.pause_record() != nullptr);
    CHECK(api.pause_record()->since == mono(2));
    CHECK(api.pause_record()->run_timeout_left == core::Duration(std::chrono::seconds(8)));
    CHECK_FALSE(after.next_deadline().has_value());
    CHECK(write_state(after, facts(), mono(5)) == doc);
    after.resume_service(0, at(20));
    CHECK(after.service(0).state() == core::State::running);
    CHECK(after.next_deadline() == mono(28));
}

// `web` with memory_max: its run 1 stopped over it (killed_by memory, ended), run 2
// running with one measurement over the limit counted (SPEC §20).
config::ServiceSpec memory_limited() {
    config::ServiceSpec web = spec("web");
    web.health.edit().memory_max = 200ULL << 20;
    return web;
}

core::Supervisor memory_state() {
    core::Supervisor sup = supervisor({memory_limited()});
    sup.start(at(0));
    sup.on_spawned(0, 1, 100, at(0.1));
    sup.on_memory(0, 1, 300ULL << 20, false, at(1));
    sup.on_memory(0, 1, 300ULL << 20, false, at(2));
    CHECK(sup.on_exit(100, killed(SIGTERM), at(2.1)));
    sup.take_actions();
    sup.on_time(at(10));  // the restart, past its backoff
    sup.take_actions();
    sup.on_spawned(0, 2, 101, at(10));
    sup.on_memory(0, 2, 300ULL << 20, false, at(11));
    sup.take_actions();
    return sup;
}

TEST_CASE("memory_max: the kills, the count over the limit and killed_by memory are handed over") {
    core::Supervisor before = memory_state();
    const core::Service& was = before.service(0);
    REQUIRE(was.memory_kills() == 1);
    REQUIRE(was.memory_over() == 1);
    REQUIRE(was.last_exit().has_value());
    REQUIRE(was.last_exit()->killed_by == core::KilledBy::memory);
    const std::string doc = write_state(before, facts(), mono(12));
    core::Supervisor after = supervisor({memory_limited()});
    REQUIRE(apply_state(tree_of(doc), after, mono(12.2)).has_value());
    after.resumed(at(12.2));
    const core::Service& web = after.service(0);
    CHECK(web.pid() == 101);
    CHECK(web.memory_kills() == 1);
    CHECK(web.memory_over() == 1);
    REQUIRE(web.last_exit().has_value());
    CHECK(web.last_exit()->killed_by == core::KilledBy::memory);
    // The next measurement over the limit is the second in a row: the run is stopped.
    after.on_memory(0, 2, 300ULL << 20, false, at(13));
    CHECK(after.service(0).state() == core::State::stopping);
    CHECK(after.service(0).memory_kills() == 2);

    // To a pkitd that reads version 3 at most: no count, and killed_by its nearest.
    const std::string old = write_state(before, facts(), mono(12), 3);
    CHECK_FALSE(json::parse(old)["core"]["services"]["web"].contains("memory_kills"));
    core::Supervisor older = supervisor({memory_limited()});
    REQUIRE(apply_state(tree_of(old), older, mono(12.2)).has_value());
    REQUIRE(older.service(0).last_exit().has_value());
    CHECK(older.service(0).last_exit()->killed_by == core::KilledBy::liveness);
    CHECK(older.service(0).memory_over() == 0);
}

TEST_CASE("a state of version 1, from a pkitd before pause, is read") {
    core::Supervisor before = four_states();
    json doc = json::parse(write_state(before, facts(), mono(5)));
    doc["version"] = 1;
    for (auto& [name, service] : doc["core"]["services"].items()) {
        service.erase("paused");
        service.erase("oom_kills");  // version 2 added the OOM kills too
        if (service.contains("last_exit") && service["last_exit"].is_object()) {
            service["last_exit"].erase("oom_killed");
        }
    }
    doc.erase("cgroup_runs");
    doc.erase("scaled");  // version 2 added the counts `scale` set too
    auto read = read_facts(tree_of(doc));
    REQUIRE_MESSAGE(read.has_value(), read.error());
    CHECK(read->scaled.empty());
    core::Supervisor after = fresh();
    REQUIRE(apply_state(tree_of(doc), after, mono(5.2)).has_value());
    CHECK(after.service(0).state() == core::State::running);
    CHECK(after.service(1).state() == core::State::backoff);
    // A version 2 state must have the fields that version added.
    doc["version"] = 2;
    doc["scaled"] = json::array();
    doc["cgroup_runs"] = json::array();
    core::Supervisor strict = fresh();
    auto refused = apply_state(tree_of(doc), strict, mono(5.2));
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error() == "core.services.api.oom_kills: missing");
}

TEST_CASE("the reader refuses what it cannot trust, naming the field") {
    core::Supervisor sup = four_states();
    const json good = json::parse(write_state(sup, facts(), mono(5)));
    auto refused = [&](const json& doc) {
        core::Supervisor target = fresh();
        auto r = apply_state(tree_of(doc), target, mono(6));
        REQUIRE_FALSE(r.has_value());
        return r.error();
    };
    json doc = good;
    doc["version"] = 5;
    CHECK(refused(doc) == "state version 5, this pkitd reads 1 to 4");
    doc = good;
    doc["core"]["services"]["db"]["phase"] = 12;  // paused, without its record
    CHECK(refused(doc) == "core.services.db.paused: does not match the phase");
    doc = good;
    doc["core"]["services"]["web"].erase("oom_kills");
    CHECK(refused(doc) == "core.services.web.oom_kills: missing");
    doc = good;
    doc["format"] = "something else";
    CHECK(refused(doc) == "not a pkit state file");
    doc = good;
    doc["core"]["services"]["api"].erase("run");
    CHECK(refused(doc) == "core.services.api.run: missing");
    doc = good;
    doc["core"]["services"]["db"]["restarts"] = "three";
    CHECK(refused(doc) == "core.services.db.restarts: not an integer");
    doc = good;
    doc["core"]["services"]["db"]["phase"] = 99;
    CHECK(refused(doc) == "core.services.db.phase: out of range");
    doc = good;
    doc["core"]["services"]["db"]["pid"] = 1LL << 40;
    CHECK(refused(doc) == "core.services.db.pid: out of range");
    // kill(-1) would reach every process; a negative pid is no process at all.
    for (long long pid : {1LL, -5LL}) {
        doc = good;
        doc["core"]["services"]["db"]["pid"] = pid;
        CHECK(refused(doc) == "core.services.db.pid: not a run's process");
    }
    // A moment so far off that adding the hand-over's moment would overflow.
    doc = good;
    doc["core"]["services"]["db"]["kill"] = std::numeric_limits<std::int64_t>::max();
    CHECK(refused(doc) == "core.services.db.kill: out of range");
    doc = good;
    doc["core"]["root_window"]["times"] = json::array({std::numeric_limits<std::int64_t>::min()});
    CHECK(refused(doc) == "core.root_window.times: out of range");
    doc = good;
    doc["core"]["services"]["ghost"] = good["core"]["services"]["api"];
    CHECK(refused(doc) == "core.services: names an entry the configuration does not have");
    doc = good;
    doc["core"]["services"].erase("web");
    CHECK(refused(doc) == "core.services: has no entry for web");
    doc = good;
    doc["core"]["services"]["api"]["tail"]["lines"][0]["stream"] = 5;
    CHECK(refused(doc) == "core.services.api.tail.lines.stream: out of range");
    doc = good;
    doc["fds"][0]["fd"] = -1;
    CHECK(refused(doc) == "fds.fd: negative");
    doc = good;
    doc.erase("scaled");
    CHECK(refused(doc) == "scaled: not a list");
    doc = good;
    doc["scaled"][0]["count"] = 1001;
    CHECK(refused(doc) == "scaled.count: out of range");
    doc = good;
    doc["scaled"][0]["file_count"] = 0;
    CHECK(refused(doc) == "scaled.file_count: out of range");
    doc = good;
    doc["scaled"][0]["file"] = "worker@2";
    CHECK(refused(doc) == "scaled.file: not a service file's name");
    doc = good;
    doc["scaled"][0].erase("file");
    CHECK(refused(doc) == "scaled.file: missing");
    CHECK(refused(json::array()) == "the state is not a JSON object");
    // A member twice: the service names one more entry than the configuration has.
    std::string twice = write_state(sup, facts(), mono(5));
    const std::string api = "\"services\":{\"api\":";
    const auto at_api = twice.find(api);
    REQUIRE(at_api != std::string::npos);
    const auto api_end = twice.find(",\"db\":", at_api);
    REQUIRE(api_end != std::string::npos);
    const std::string entry =
        twice.substr(at_api + api.size() - 6, api_end - (at_api + api.size() - 6));
    twice.insert(api_end, "," + entry);
    core::Supervisor target = fresh();
    auto r = apply_state(tree_of(twice), target, mono(6));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == "core.services: names an entry the configuration does not have");
}

}  // namespace
}  // namespace pkit::shell::upgrade
