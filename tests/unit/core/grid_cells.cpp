// The state grid's columns and rows as code (grid_cells.hpp).

#include "tests/unit/core/grid_cells.hpp"

#include <doctest/doctest.h>

#include <csignal>
#include <sstream>

#include "tests/unit/core/grid_tape.hpp"

namespace pkit::core::test::grid {

using namespace std::chrono_literals;

std::vector<Phase> all_phases() {
    std::vector<Phase> phases;
    for (int i = 0; !words_of(static_cast<Phase>(i)).name.empty(); ++i) {
        phases.push_back(static_cast<Phase>(i));
    }
    return phases;
}

std::vector<Input> all_inputs() {
    std::vector<Input> inputs;
    for (int i = 0; !words_of(static_cast<Input>(i)).name.empty(); ++i) {
        inputs.push_back(static_cast<Input>(i));
    }
    return inputs;
}

std::vector<std::string> words_in(std::string_view text) {
    std::istringstream in{std::string(text)};
    std::vector<std::string> words;
    for (std::string w; in >> w;) {
        words.push_back(w);
    }
    return words;
}

std::optional<Word> parse_word(const std::string& word) {
    const std::size_t slash = word.find('/');
    const std::string phase_word = word.substr(0, slash);
    std::string suffix = slash == std::string::npos ? "" : word.substr(slash + 1);
    if (suffix != "" && suffix != "r" && suffix != "e" && suffix != "a" && suffix != "n") {
        return std::nullopt;
    }
    for (Phase phase : all_phases()) {
        const std::vector<std::string> columns = words_in(words_of(phase).columns);
        for (std::size_t k = 0; k < columns.size(); ++k) {
            if (columns[k] == phase_word) {
                return Word{phase, k, suffix};
            }
        }
    }
    return std::nullopt;
}

bool shows(const Service& s, const std::string& word) {
    const std::optional<Word> w = parse_word(word);
    REQUIRE_MESSAGE(w, "not a column's word: " << word);
    if (s.phase() != w->phase) {
        return false;
    }
    if (w->phase == Phase::starting && (s.pid() == 0) != (w->which == 0)) {
        return false;
    }
    const bool draining = s.draining_pid() != 0;
    const bool armed = s.schedule().armed;
    if (w->suffix == "r") {
        return s.replacing();
    }
    if (w->suffix == "e") {
        return draining && !s.replacing();
    }
    if (w->suffix == "a" || w->suffix == "n") {
        return armed && s.tick_due().has_value() == (w->suffix == "a");
    }
    return !draining && !armed;
}

// --- The columns of each grid: the service, and how it is brought there -----------

namespace {

NotifyMessage ready_message() {
    NotifyMessage message;
    message.ready = true;
    return message;
}

Tick tick_at(double seconds) {
    return Tick{at(seconds).mono, at(seconds).wall, false};
}

// The plain grid: a plain service, but for what its column needs.
config::ServiceSpec plain_spec(const std::string& column) {
    config::ServiceSpec s = spec("web");
    s.health.edit().memory_max = 1 << 20;
    s.stop_when.edit().exit_codes = {0};  // exit 0: done
    if (column == "strt") {
        s.ready.edit().notify = true;
        s.ready.edit().timeout = 10s;
    } else if (column == "run" || column == "paus") {
        s.health.edit().kind = config::ProbeKind::exec;
        s.health.edit().argv = {"/bin/true"};
        s.health.edit().interval = 1s;
        s.health.edit().failures = 1;
    } else if (column == "stpa") {
        s.storm.edit().pause = 30s;
        s.storm.edit().threshold = 1.0;
    } else if (column == "fail") {
        s.restart.max_restarts = 0;
    }
    return s;
}

void bring_plain(Driver& d, const std::string& column) {
    if (column == "wait") {
        d.svc.want_up(at(0), d.out, true);
    } else if (column == "lnch" || column == "canc") {
        d.svc.want_up(at(0), d.out, true);
        d.svc.launch(at(0), d.out);
        if (column == "canc") {
            d.svc.stop(at(0.5), d.out, AfterStop::stay_stopped, std::nullopt);
        }
    } else if (column == "strt" || column == "run") {
        d.start(at(0));
    } else if (column == "paus") {
        d.start(at(0));
        d.svc.pause(at(0.5), d.out);
    } else if (column == "stop" || column == "stpd") {
        d.start(at(0));
        d.svc.stop(at(0.5), d.out, AfterStop::stay_stopped, std::nullopt);
        if (column == "stpd") {
            d.exit(at(1), killed(SIGTERM));
        }
    } else if (column == "back" || column == "stpa" || column == "fail" || column == "due" ||
               column == "hold") {
        d.start(at(0));
        d.exit(at(1), exited(1));
        if (column == "due") {
            d.svc.on_time(at(1.2), d.out);
        } else if (column == "hold") {
            d.svc.hold_until(at(50).mono);
        }
    } else if (column == "done") {
        d.start(at(0));
        d.exit(at(1), exited(0));
    }
}

// The start_first grid: a ready service with order = "start_first", ready by
// notify within 500ms.
config::ServiceSpec start_first_spec(const std::string&) {
    config::ServiceSpec s = spec("web");
    s.health.edit().memory_max = 1 << 20;
    s.restart.order = config::RestartOrder::start_first;
    s.ready.edit().notify = true;
    s.ready.edit().timeout = 500ms;
    return s;
}

void bring_start_first(Driver& d, const std::string& column) {
    d.start(at(0));
    d.svc.on_notify(d.svc.run(), ready_message(), at(0.1), d.out);
    if (column == "run") {
        return;
    }
    REQUIRE(d.svc.begin_replacement(at(1), d.out));
    if (column == "stpd/e") {
        d.svc.stop(at(1.2), d.out, AfterStop::stay_stopped, std::nullopt);
        return;
    }
    if (column == "wait/r") {
        return;
    }
    d.svc.launch(at(1), d.out);
    if (column == "lnch/r") {
        return;
    }
    d.svc.on_spawned(d.svc.run(), 101, at(1), d.out);
    if (column == "stop/r") {
        d.svc.on_time(at(1.5), d.out);  // its ready timeout
    } else if (column == "run/e") {
        d.svc.on_notify(d.svc.run(), ready_message(), at(1.2), d.out);
    }
}

// The schedule grid: a oneshot job every 10s, done on exit 0, retried on a failure.
config::ServiceSpec schedule_spec(const std::string& column) {
    config::ServiceSpec s = spec("backup");
    s.health.edit().memory_max = 1 << 20;
    s.type = config::ServiceType::oneshot;
    s.schedule = config::parse_schedule("every 10s").value();
    s.affects_readiness = false;
    if (column == "fail/a") {
        s.restart.max_restarts = 0;
    }
    return s;
}

void bring_schedule(Driver& d, const std::string& column) {
    if (column == "stpd") {
        return;  // never armed (autostart off)
    }
    d.svc.arm(column == "stpd/n" ? std::nullopt : std::optional(tick_at(10)));
    if (column == "stpd/a" || column == "stpd/n") {
        return;
    }
    d.svc.note_episode(at(0));  // an episode, as `pkitctl start` runs one
    d.svc.want_up(at(0), d.out, true);
    if (column == "wait/a") {
        return;
    }
    d.svc.launch(at(0), d.out);
    d.svc.on_spawned(d.svc.run(), 100, at(0), d.out);
    if (column == "back/a" || column == "fail/a") {
        d.exit(at(1), exited(1));
    } else if (column == "done/a") {
        d.exit(at(1), exited(0));
    }
}

struct Columns {
    config::ServiceSpec (*spec)(const std::string& column);
    void (*bring)(Driver& d, const std::string& column);
};

Columns columns_of(const std::string& grid) {
    if (grid == "phase") {
        return {plain_spec, bring_plain};
    }
    if (grid == "start_first") {
        return {start_first_spec, bring_start_first};
    }
    REQUIRE_MESSAGE(grid == "schedule", "a grid the test does not know: " << grid);
    return {schedule_spec, bring_schedule};
}

}  // namespace

Driver brought(const std::string& grid, const std::string& column) {
    Columns columns = columns_of(grid);
    Driver d(columns.spec(column));
    columns.bring(d, column);
    d.out.clear();
    return d;
}

// --- The inputs ----------------------------------------------------------------------

// The newest run a start_first restart replaced that is still alive (draining), or 0
// (no run). Until the new run is launched, the current run's number is still the
// replaced run's.
namespace {

std::uint64_t replaced_run(const Service& s) {
    for (std::uint64_t run = s.run(); run > 0; --run) {
        if (s.pid_of(run) != 0 && (run != s.run() || s.pid() == 0)) {
            return run;
        }
    }
    return 0;
}

// The upgrade's hand-over: the state walked out, and into a new Service of the same
// spec, which takes the old one's place.
void restore(Driver& d) {
    Tape tape;
    d.svc.persist(tape);
    Service next(d.svc.spec(), d.svc.index(), d.svc.group());
    tape.rewind();
    next.persist(tape);
    CHECK(tape.errors().empty());
    d.svc = std::move(next);
}

}  // namespace

void feed(Driver& d, Input input, std::uint64_t run) {
    Service& s = d.svc;
    const Now now = at(2);
    switch (input) {
        case Input::want_up:
            return s.want_up(now, d.out, true);
        case Input::launch:
            return s.launch(now, d.out);
        case Input::spawned:
            return s.on_spawned(run, 200, now, d.out);
        case Input::launch_failed: {
            LaunchFailure failure{config::LaunchError::not_found, "not_found: x"};
            static_cast<void>(s.on_launch_failed(run, failure, now, d.out, 0.5));
            return;
        }
        case Input::exit:
            static_cast<void>(s.on_exit(run, exited(1), now, d.out, 0.5));
            return;
        case Input::old_exit:
            static_cast<void>(s.on_exit(replaced_run(s), exited(1), now, d.out, 0.5));
            return;
        case Input::deadline: {
            Now due = now;
            if (auto next = s.next_deadline()) {
                due.mono = std::max(due.mono, *next);
            }
            return s.on_time(due, d.out);
        }
        case Input::stop:
            return s.stop(now, d.out, AfterStop::stay_stopped, std::nullopt);
        case Input::restart:
            return s.stop(now, d.out, AfterStop::relaunch, std::nullopt);
        case Input::hold_until:
            return s.hold_until(at(60).mono);
        case Input::group_restart:
            return s.restart_by_group(now, d.out);
        case Input::root_restart:
            return s.restart_by_root(now, d.out);
        case Input::replace_run:
            static_cast<void>(s.begin_replacement(now, d.out));
            return;
        case Input::replace_spec: {
            config::ServiceSpec changed = s.spec();
            changed.command.push_back("--changed");
            return s.replace_spec(std::move(changed), s.group());
        }
        case Input::set_group:
            return s.set_group("g");
        case Input::forbid_restarts:
            return s.forbid_restarts();
        case Input::kill_now:
            return s.kill_now(d.out);
        case Input::kill_draining:
            return s.kill_draining_now(d.out);
        case Input::record_output:
            return s.record_output(run, Stream::stdout_, "a line", 2.0);
        case Input::ready_ok:
            return s.on_probe_result(run, ProbePurpose::ready, true, now, d.out);
        case Input::ready_failed:
            return s.on_probe_result(run, ProbePurpose::ready, false, now, d.out);
        case Input::health_ok:
            return s.on_probe_result(run, ProbePurpose::health, true, now, d.out);
        case Input::health_failed:
            return s.on_probe_result(run, ProbePurpose::health, false, now, d.out);
        case Input::memory:
            // One measurement over the 1 MiB every grid's spec sets (a second in a row
            // would stop the run: tests/unit/core/test_memory.cpp).
            return s.on_memory(run, 2 << 20, false, now, d.out);
        case Input::notify: {
            NotifyMessage message = ready_message();
            message.status = "serving";
            return s.on_notify(run, message, now, d.out);
        }
        case Input::pause:
            return s.pause(now, d.out);
        case Input::resume:
            return s.resume(now, d.out);
        case Input::arm:
            return s.arm(tick_at(20));
        case Input::disarm:
            return s.disarm();
        case Input::tick: {
            const Now due = s.tick_due() ? Now{*s.tick_due(), s.schedule().tick_wall} : now;
            return s.on_tick(due, d.out, tick_at(20));
        }
        case Input::note_episode:
            return s.note_episode(now);
        case Input::replace_schedule:
            return s.replace_schedule(config::parse_schedule("every 1m").value());
        case Input::replace_log_file:
            return s.replace_log_file(config::LogFileKeys{.path = "/var/log/x.log"});
        case Input::restamp:
            return s.restamp(config::ParseStamp{77});
        case Input::restore:
            return restore(d);
        case Input::resumed:
            return s.resumed(now);
    }
    FAIL("no driver for the input " << words_of(input).name);
}

std::optional<Input> input_named(std::string_view name) {
    for (Input input : all_inputs()) {
        if (words_of(input).name == name) {
            return input;
        }
    }
    return std::nullopt;
}

}  // namespace pkit::core::test::grid
