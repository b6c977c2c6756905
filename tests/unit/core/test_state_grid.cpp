// The grid at the top of daemon/core/service.hpp, cell by cell. The test reads the grid
// from the header itself, brings a Service to each phase (a column), feeds it each input
// (a row) and checks the cell: the phase it is left in; for "-", that nothing changed
// at all (no action, and every query answers as before); for "·", that the phase stayed.
// An input for a run other than the current one is "-" in every phase. So the comment
// cannot drift from the code.

#include <doctest/doctest.h>

#include <csignal>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "daemon/core/service.hpp"
#include "tests/unit/core/fake.hpp"

namespace pkit::core {
namespace {

using namespace test;
using namespace std::chrono_literals;

struct Grid {
    std::vector<std::string> phases;
    std::vector<std::pair<std::string, std::vector<std::string>>> rows;
};

// The grid's lines: the header "input \ phase" and one line an input, up to the first
// blank comment line.
Grid read_grid() {
    std::ifstream in(PKIT_SOURCE_DIR "/daemon/core/service.hpp");
    REQUIRE(in);
    Grid grid;
    std::string line;
    bool inside = false;
    while (std::getline(in, line)) {
        std::istringstream words(line);
        std::vector<std::string> cells;
        for (std::string w; words >> w;) {
            cells.push_back(w);
        }
        if (!inside) {
            if (cells.size() > 4 && cells[1] == "input" && cells[2] == "\\") {
                grid.phases.assign(cells.begin() + 4, cells.end());
                inside = true;
            }
            continue;
        }
        if (cells.size() < 2) {
            break;
        }
        grid.rows.emplace_back(cells[1], std::vector<std::string>(cells.begin() + 2, cells.end()));
    }
    return grid;
}

// Each column's service: plain, but for what its phase needs.
config::ServiceSpec spec_for(const std::string& phase) {
    config::ServiceSpec s = spec("web");
    s.stop_when.edit().exit_codes = {0};  // exit 0: done
    if (phase == "strt") {
        s.ready.edit().notify = true;
        s.ready.edit().timeout = 10s;
    } else if (phase == "run" || phase == "paus") {
        s.health.edit().kind = config::ProbeKind::exec;
        s.health.edit().argv = {"/bin/true"};
        s.health.edit().interval = 1s;
        s.health.edit().failures = 1;
    } else if (phase == "stpa") {
        s.storm.edit().pause = 30s;
        s.storm.edit().threshold = 1.0;
    } else if (phase == "fail") {
        s.restart.max_restarts = 0;
    }
    return s;
}

void bring(Driver& d, const std::string& phase) {
    if (phase == "wait") {
        d.svc.want_up(at(0), d.out, true);
    } else if (phase == "lnch" || phase == "canc") {
        d.svc.want_up(at(0), d.out, true);
        d.svc.launch(at(0), d.out);
        if (phase == "canc") {
            d.svc.stop(at(0.5), d.out, AfterStop::stay_stopped, std::nullopt);
        }
    } else if (phase == "strt" || phase == "run") {
        d.start(at(0));
    } else if (phase == "paus") {
        d.start(at(0));
        d.svc.pause(at(0.5), d.out);
    } else if (phase == "stop" || phase == "stpd") {
        d.start(at(0));
        d.svc.stop(at(0.5), d.out, AfterStop::stay_stopped, std::nullopt);
        if (phase == "stpd") {
            d.exit(at(1), killed(SIGTERM));
        }
    } else if (phase == "back" || phase == "stpa" || phase == "fail" || phase == "due" ||
               phase == "hold") {
        d.start(at(0));
        d.exit(at(1), exited(1));
        if (phase == "due") {
            d.svc.on_time(at(1.2), d.out);
        } else if (phase == "hold") {
            d.svc.hold_until(at(50).mono);
        }
    } else if (phase == "done") {
        d.start(at(0));
        d.exit(at(1), exited(0));
    } else {
        REQUIRE(phase == "stpd");
    }
    d.out.clear();
}

// Everything a Service lets anyone see.
std::string fingerprint(const Service& s) {
    std::ostringstream o;
    auto time = [](std::optional<TimePoint> t) { return seconds(t).value_or(-1.0); };
    o << to_string(s.state()) << " pending " << s.restart_pending() << " held "
      << s.held_by_daemon() << " up " << s.desired_up() << " run " << s.run() << " pid " << s.pid()
      << " ready " << s.ready() << " restarts " << s.restarts() << " crashes "
      << s.crashes_counted() << " deadline " << time(s.next_deadline()) << " restart_at "
      << time(s.restart_at()) << " started " << time(s.started_at()) << " health "
      << (s.health() ? static_cast<int>(*s.health()) : -1) << " failures " << s.health_failures()
      << " notify " << s.notify_status().value_or("-") << " stopped "
      << (s.stopped_reason() ? to_string(*s.stopped_reason()) : "-") << " exit "
      << s.last_exit().has_value() << " launch_error " << s.last_launch_error().value_or("-")
      << " storm " << s.storm_pauses() << " kills " << s.liveness_kills() << " tail "
      << s.tail().size() << "/" << s.tail_run().value_or(0) << " previous "
      << s.previous_tail().size() << "/" << s.previous_tail_run().value_or(0) << " group "
      << s.group().value_or("-") << " command " << s.spec().command.size() << " decision "
      << s.last_decision().why;
    return o.str();
}

// The phase as the public queries show it, in the grid's words (lnch and canc alike).
bool shows(const Service& s, const std::string& phase) {
    const State state = s.state();
    if (phase == "wait" || phase == "due") {
        return state == State::waiting && s.restart_pending() == (phase == "due");
    }
    if (phase == "lnch" || phase == "canc") {
        return state == State::starting && s.pid() == 0;
    }
    if (phase == "strt") {
        return state == State::starting && s.pid() != 0;
    }
    if (phase == "stpa" || phase == "hold") {
        return state == State::storm_pause && s.held_by_daemon() == (phase == "hold");
    }
    static const std::map<std::string, State> plain = {
        {"run", State::running},  {"stop", State::stopping}, {"back", State::backoff},
        {"stpd", State::stopped}, {"done", State::done},     {"fail", State::failed},
        {"paus", State::paused},
    };
    auto it = plain.find(phase);
    REQUIRE_MESSAGE(it != plain.end(), "unknown phase " << phase);
    return state == it->second;
}

using Input = std::function<void(Driver&, std::uint64_t run)>;

const std::map<std::string, Input>& inputs() {
    static const std::map<std::string, Input> all = {
        {"want_up", [](Driver& d, std::uint64_t) { d.svc.want_up(at(2), d.out, true); }},
        {"launch", [](Driver& d, std::uint64_t) { d.svc.launch(at(2), d.out); }},
        {"spawned", [](Driver& d, std::uint64_t run) { d.svc.on_spawned(run, 200, at(2), d.out); }},
        {"launch_failed",
         [](Driver& d, std::uint64_t run) {
             LaunchFailure failure{config::LaunchError::not_found, "not_found: x"};
             static_cast<void>(d.svc.on_launch_failed(run, failure, at(2), d.out, 0.5));
         }},
        {"exit",
         [](Driver& d, std::uint64_t run) {
             static_cast<void>(d.svc.on_exit(run, exited(1), at(2), d.out, 0.5));
         }},
        {"deadline",
         [](Driver& d, std::uint64_t) {
             Now now = at(2);
             if (auto due = d.svc.next_deadline()) {
                 now.mono = std::max(now.mono, *due);
             }
             d.svc.on_time(now, d.out);
         }},
        {"stop",
         [](Driver& d, std::uint64_t) {
             d.svc.stop(at(2), d.out, AfterStop::stay_stopped, std::nullopt);
         }},
        {"restart",
         [](Driver& d, std::uint64_t) {
             d.svc.stop(at(2), d.out, AfterStop::relaunch, std::nullopt);
         }},
        {"hold_until", [](Driver& d, std::uint64_t) { d.svc.hold_until(at(60).mono); }},
        {"group_restart", [](Driver& d, std::uint64_t) { d.svc.restart_by_group(at(2), d.out); }},
        {"root_restart", [](Driver& d, std::uint64_t) { d.svc.restart_by_root(at(2), d.out); }},
        {"replace_spec",
         [](Driver& d, std::uint64_t) {
             config::ServiceSpec changed = d.svc.spec();
             changed.command.push_back("--changed");
             d.svc.replace_spec(std::move(changed), d.svc.group());
         }},
        {"set_group", [](Driver& d, std::uint64_t) { d.svc.set_group("g"); }},
        {"forbid_restarts", [](Driver& d, std::uint64_t) { d.svc.forbid_restarts(); }},
        {"kill_now", [](Driver& d, std::uint64_t) { d.svc.kill_now(d.out); }},
        {"record_output",
         [](Driver& d, std::uint64_t run) {
             d.svc.record_output(run, Stream::stdout_, "a line", 2.0);
         }},
        {"ready_ok",
         [](Driver& d, std::uint64_t run) {
             d.svc.on_probe_result(run, ProbePurpose::ready, true, at(2), d.out);
         }},
        {"ready_failed",
         [](Driver& d, std::uint64_t run) {
             d.svc.on_probe_result(run, ProbePurpose::ready, false, at(2), d.out);
         }},
        {"health_ok",
         [](Driver& d, std::uint64_t run) {
             d.svc.on_probe_result(run, ProbePurpose::health, true, at(2), d.out);
         }},
        {"health_failed",
         [](Driver& d, std::uint64_t run) {
             d.svc.on_probe_result(run, ProbePurpose::health, false, at(2), d.out);
         }},
        {"notify",
         [](Driver& d, std::uint64_t run) {
             NotifyMessage message;
             message.ready = true;
             message.status = "serving";
             d.svc.on_notify(run, message, at(2), d.out);
         }},
        {"pause", [](Driver& d, std::uint64_t) { d.svc.pause(at(2), d.out); }},
        {"resume", [](Driver& d, std::uint64_t) { d.svc.resume(at(2), d.out); }},
    };
    return all;
}

// The inputs that name a run: for another run than the current one, "-" everywhere.
const std::vector<std::string> k_run_inputs = {"spawned",       "launch_failed", "exit",
                                               "record_output", "ready_ok",      "ready_failed",
                                               "health_ok",     "health_failed", "notify"};

TEST_CASE("state grid: the grid in service.hpp lists every phase and every input") {
    Grid grid = read_grid();
    CHECK(grid.phases.size() == 14);
    std::vector<std::string> listed;
    for (const auto& [input, cells] : grid.rows) {
        CAPTURE(input);
        CHECK(cells.size() == grid.phases.size());
        CHECK(inputs().contains(input));
        listed.push_back(input);
    }
    for (const auto& [input, drive] : inputs()) {
        CAPTURE(input);
        CHECK(std::find(listed.begin(), listed.end(), input) != listed.end());
    }
}

TEST_CASE("state grid: every cell, driven") {
    Grid grid = read_grid();
    REQUIRE_FALSE(grid.rows.empty());
    for (const auto& [input, cells] : grid.rows) {
        REQUIRE(cells.size() == grid.phases.size());
        for (std::size_t k = 0; k < cells.size(); ++k) {
            const std::string& phase = grid.phases[k];
            const std::string& cell = cells[k];
            CAPTURE(input);
            CAPTURE(phase);
            CAPTURE(cell);
            Driver d(spec_for(phase));
            bring(d, phase);
            REQUIRE(shows(d.svc, phase));
            const std::string before = fingerprint(d.svc);
            inputs().at(input)(d, d.svc.run());
            if (cell == "-") {
                CHECK(d.take() == "");
                CHECK(fingerprint(d.svc) == before);
            } else if (cell == "·") {
                CHECK(shows(d.svc, phase));
            } else {
                CHECK(shows(d.svc, cell));
            }
        }
    }
}

TEST_CASE("state grid: an input for another run changes nothing, in every phase") {
    Grid grid = read_grid();
    for (const std::string& phase : grid.phases) {
        for (const std::string& input : k_run_inputs) {
            CAPTURE(phase);
            CAPTURE(input);
            Driver d(spec_for(phase));
            bring(d, phase);
            const std::string before = fingerprint(d.svc);
            inputs().at(input)(d, d.svc.run() + 7);
            CHECK(d.take() == "");
            CHECK(fingerprint(d.svc) == before);
        }
    }
}

}  // namespace
}  // namespace pkit::core
