// output_matches in the core (SPEC §2): each line of the current run is searched once,
// as it arrives, and the gates read what was recorded, not the tail; lines of an ended
// run (its leftovers) never judge another run.

#include <doctest/doctest.h>

#include "daemon/core/service.hpp"
#include "tests/unit/core/fake.hpp"

namespace pkit::core {
namespace {

using namespace test;

config::ServiceSpec watching(const char* stop_when, const char* give_up_when) {
    config::ServiceSpec s = spec("web");
    if (stop_when != nullptr) {
        s.stop_when.edit().output_matches = pattern(stop_when);
    }
    if (give_up_when != nullptr) {
        s.give_up_when.edit().output_matches = pattern(give_up_when);
    }
    return s;
}

TEST_CASE("a line is judged as it arrives, so a line gone from the tail still counts") {
    config::ServiceSpec s = watching("^FATAL", nullptr);
    s.output.max_lines = 1;
    Driver d(s);
    d.start(at(0));
    d.svc.record_output(1, Stream::stderr_, "FATAL: config missing", 1000.1);
    d.svc.record_output(1, Stream::stdout_, "bye", 1000.2);  // pushes it out of the tail
    REQUIRE(d.svc.tail().size() == 1);
    d.exit(at(1), exited(1));
    CHECK(d.svc.state() == State::failed);
    CHECK(d.svc.stopped_reason() == StopReason::predicate);
    CHECK(d.svc.last_decision().why ==
          "output line \"FATAL: config missing\" matched stop_when.output_matches");
}

TEST_CASE("a line is searched whole, though the tail keeps only its end") {
    config::ServiceSpec s = watching("^BEGIN", nullptr);
    s.output.max_bytes = 16;
    Driver d(s);
    d.start(at(0));
    d.svc.record_output(1, Stream::stdout_, "BEGIN " + std::string(100, 'x'), 1000.1);
    CHECK(d.svc.tail().at(0).text == std::string(16, 'x'));
    d.exit(at(1), exited(1));
    CHECK(d.svc.stopped_reason() == StopReason::predicate);
}

TEST_CASE("the newest matching line is the one explain shows, cut at 80 bytes") {
    Driver d(watching(nullptr, "FATAL"));
    d.start(at(0));
    d.svc.record_output(1, Stream::stderr_, "FATAL: first", 1000.1);
    d.svc.record_output(1, Stream::stdout_, "quiet", 1000.2);
    d.svc.record_output(1, Stream::stderr_, "FATAL: " + std::string(100, 'y'), 1000.3);
    d.exit(at(1), exited(1));
    CHECK(d.svc.stopped_reason() == StopReason::gave_up);
    CHECK(d.svc.last_decision().why == "gave up: output line \"FATAL: " + std::string(70, 'y') +
                                           "...\" matched give_up_when.output_matches");
}

TEST_CASE("each predicate keeps its own matches") {
    SUBCASE("a line only give_up_when matches") {
        Driver d(watching("^done$", "FATAL"));
        d.start(at(0));
        d.svc.record_output(1, Stream::stderr_, "FATAL: not done", 1000.1);
        d.exit(at(1), exited(1));
        CHECK(d.svc.stopped_reason() == StopReason::gave_up);
    }
    SUBCASE("a line only stop_when matches") {
        Driver d(watching("^done$", "FATAL"));
        d.start(at(0));
        d.svc.record_output(1, Stream::stdout_, "done", 1000.1);
        d.exit(at(1), exited(1));
        CHECK(d.svc.stopped_reason() == StopReason::predicate);
    }
    SUBCASE("a clean run: give_up_when is not consulted") {
        Driver d(watching("^done$", "FATAL"));
        d.start(at(0));
        d.svc.record_output(1, Stream::stderr_, "FATAL: but exits 0", 1000.1);
        d.exit(at(1), exited(0));
        CHECK(d.svc.stopped_reason() == StopReason::policy_satisfied);
    }
}

TEST_CASE("output before the exec is confirmed belongs to the run") {
    Driver d(watching("^ready$", nullptr));
    d.svc.want_up(at(0), d.out, true);
    d.svc.launch(at(0), d.out);
    d.svc.record_output(1, Stream::stdout_, "ready", 1000.0);  // pipes read before the report
    d.svc.on_spawned(1, 100, at(0), d.out);
    d.exit(at(1), exited(0));
    CHECK(d.svc.stopped_reason() == StopReason::predicate);
}

TEST_CASE("leftovers of an ended run judge no run") {
    config::ServiceSpec s = watching(nullptr, "FATAL");
    Driver d(s);
    d.start(at(0));
    d.exit(at(1), exited(1));
    REQUIRE(d.svc.state() == State::backoff);
    d.svc.record_output(1, Stream::stderr_, "FATAL: from the group", 1001.1);  // after the exit
    CHECK(d.svc.tail().at(0).text == "FATAL: from the group");  // still run 1's output
    d.after_backoff(at(1.2));
    d.svc.record_output(1, Stream::stderr_, "FATAL: drained late", 1001.3);  // run 2 is up
    CHECK(d.svc.previous_tail().size() == 2);
    d.exit(at(2), exited(1));
    CHECK(d.svc.state() == State::backoff);  // run 2 printed nothing that matched
    d.after_backoff(at(2.4));
    d.svc.record_output(3, Stream::stderr_, "FATAL: run 3", 1002.5);
    d.exit(at(3), exited(1));
    CHECK(d.svc.stopped_reason() == StopReason::gave_up);
}

TEST_CASE("a run stopped on request is not judged by its output") {
    Driver d(watching("stop me", nullptr));
    d.start(at(0));
    d.svc.record_output(1, Stream::stdout_, "stop me", 1000.1);
    d.svc.stop(at(1), d.out, AfterStop::relaunch, std::nullopt);
    d.exit(at(1.1), killed(SIGTERM));
    CHECK(d.svc.state() == State::waiting);
    d.relaunch(at(1.2));
    d.exit(at(2), exited(1));
    CHECK(d.svc.state() == State::backoff);  // run 1's match is not run 2's
}

TEST_CASE("a reload's new pattern judges the runs after it") {
    Driver d(watching("old", nullptr));
    d.start(at(0));
    d.exit(at(1), exited(1));
    d.svc.stop(at(1.1), d.out, AfterStop::stay_stopped, std::nullopt);
    d.svc.replace_spec(watching("new", nullptr), std::nullopt);
    d.start(at(2));
    d.svc.record_output(2, Stream::stdout_, "old", 1002.1);
    d.exit(at(3), exited(1));
    CHECK(d.svc.state() == State::backoff);
    d.after_backoff(at(3.2));
    d.svc.record_output(3, Stream::stdout_, "new", 1003.3);
    d.exit(at(4), exited(1));
    CHECK(d.svc.stopped_reason() == StopReason::predicate);
}

// std::regex overflowed its stack on the first and never ended on the last. The
// matches sit in the first 2 KiB of the line, the part that is searched.
TEST_CASE("pathological patterns on long lines are judged, and the service goes on") {
    std::string ab;
    for (int i = 0; i < 12000; ++i) {
        ab += i % 3 == 0 ? 'b' : 'a';
    }
    struct Row {
        const char* pattern;
        std::string line;
        bool stops;
    };
    const Row rows[] = {
        {"(a|b)*c", ab, false},
        {"(a|b)*c", ab.substr(0, 2000) + "c" + ab, true},
        {".*error.*", std::string(16 * 1024, 'e'), false},
        {".*error.*", std::string(1024, 'e') + "error" + std::string(15 * 1024, 'e'), true},
        {"(a*)*b", std::string(40, 'a'), false},
        {"(a*)*b", std::string(40, 'a') + "b", true},
    };
    for (const Row& row : rows) {
        CAPTURE(row.pattern);
        CAPTURE(row.stops);
        Driver d(watching(row.pattern, nullptr));
        d.start(at(0));
        d.svc.record_output(1, Stream::stdout_, row.line, 1000.1);
        d.exit(at(1), exited(1));
        CHECK((d.svc.stopped_reason() == StopReason::predicate) == row.stops);
    }
}

}  // namespace
}  // namespace pkit::core
