// What a caller can learn of a Service, query by query (grid_observe.hpp).

#include "tests/unit/core/grid_observe.hpp"

#include <chrono>
#include <sstream>

namespace pkit::core::test::grid {

namespace {

// Run numbers asked of the queries that take one: the grids' services never go past a
// few runs.
constexpr std::uint64_t k_runs_asked = 8;

std::string text(std::optional<TimePoint> t) {
    if (!t) {
        return "-";
    }
    return std::to_string(
        std::chrono::duration_cast<std::chrono::nanoseconds>(t->time_since_epoch()).count());
}

template <class T>
std::string text(const std::optional<T>& v) {
    if (!v) {
        return "-";
    }
    std::ostringstream o;
    if constexpr (std::is_same_v<T, Duration>) {
        o << v->count() << "ns";
    } else if constexpr (std::is_enum_v<T>) {
        o << to_string(*v);
    } else {
        o << *v;
    }
    return o.str();
}

std::string tail_text(const OutputTail& tail) {
    std::ostringstream o;
    o << tail.size() << " lines, " << tail.bytes() << " bytes, truncated " << tail.truncated();
    for (std::size_t i = 0; i < tail.size(); ++i) {
        const TailLine& line = tail.at(i);
        o << " | " << to_string(line.stream) << " " << line.at << " " << line.text;
    }
    return o.str();
}

std::string exit_text(const std::optional<ExitRecord>& exit) {
    if (!exit) {
        return "-";
    }
    std::ostringstream o;
    o << "code " << text(exit->code) << " signal " << text(exit->signal) << " duration "
      << exit->duration.count() << " at " << exit->at << " timed_out " << exit->timed_out
      << " killed_by " << to_string(exit->killed_by) << " oom " << exit->oom_killed;
    return o.str();
}

std::string decision_text(const Decision& d) {
    std::ostringstream o;
    o << "restart " << d.restart << " reason " << to_string(d.reason) << " why " << d.why
      << " delay " << d.delay.count() << " storm " << d.storm_tripped << " step " << d.backoff_step
      << " counted " << d.restarts_counted << " score " << d.storm_score;
    return o.str();
}

std::string policy_text(const PolicyState& p) {
    RestartWindow window = p.window;  // count() drops what has left the window: a copy
    std::ostringstream o;
    o << "step " << p.backoff_step << " total " << window.count(TimePoint{}, Duration::zero())
      << " in window " << window.count(TimePoint{}, std::chrono::hours(1)) << " storm "
      << p.storm.value(TimePoint{} + std::chrono::seconds(2), std::chrono::seconds(60));
    return o.str();
}

std::string schedule_text(const ScheduleRecord& r) {
    std::ostringstream o;
    o << "armed " << r.armed << " tick " << text(r.tick) << " wall " << r.tick_wall << " by_wall "
      << r.by_wall << " last_started " << text(r.last_started) << " last_result "
      << text(r.last_result) << " last_success " << text(r.last_success) << " missed " << r.missed
      << " ended " << r.episodes_ended << " succeeded " << r.succeeded;
    return o.str();
}

}  // namespace

Seen observe(const Service& s) {
    Seen seen{{}, s.spec()};
    auto answer = [&](const char* query, const auto& value) {
        std::ostringstream o;
        o << value;
        seen.answers.emplace_back(query, o.str());
    };
    answer("spec", s.spec().stamp.number);
    answer("name", s.name());
    answer("index", s.index());
    answer("group", text(s.group()));
    answer("state", to_string(s.state()));
    answer("phase", words_of(s.phase()).name);
    answer("desired_up", s.desired_up());
    answer("has_process", s.has_process());
    answer("draining_pid", s.draining_pid());
    answer("replacing", s.replacing());
    answer("can_replace", s.can_replace());
    if (const Replacement* r = s.replacement()) {
        std::ostringstream o;
        o << r->old_run << " by " << r->new_run << " done " << r->done << " failure "
          << r->failure.value_or("-");
        answer("replacement", o.str());
    } else {
        answer("replacement", "-");
    }
    answer("pid", s.pid());
    answer("run", s.run());
    std::ostringstream pids;
    std::ostringstream signallable;
    for (std::uint64_t run = 0; run <= s.run() + k_runs_asked; ++run) {
        pids << s.pid_of(run) << " ";
        signallable << s.signallable(run, s.pid_of(run)) << s.signallable(run, 100)
                    << s.signallable(run, 101) << " ";
    }
    answer("pid_of", pids.str());
    answer("signallable", signallable.str());
    answer("ready", s.ready());
    answer("launch_in_flight", s.launch_in_flight());
    answer("satisfies_dependents", s.satisfies_dependents());
    answer("next_deadline", text(s.next_deadline()));
    answer("can_pause", s.can_pause());
    answer("paused", s.paused());
    if (const Service::PauseRecord* p = s.pause_record()) {
        std::ostringstream o;
        o << "since " << text(std::optional(p->since)) << " wall " << p->since_wall << " starting "
          << p->starting << " run_timeout " << text(p->run_timeout_left) << " ready_timeout "
          << text(p->ready_timeout_left);
        answer("pause_record", o.str());
    } else {
        answer("pause_record", "-");
    }
    answer("health", text(s.health()));
    answer("health_failures", s.health_failures());
    answer("notify_status", text(s.notify_status()));
    answer("restarts", s.restarts());
    answer("crashes_counted", s.crashes_counted());
    answer("restart_pending", s.restart_pending());
    answer("held_by_daemon", s.held_by_daemon());
    answer("storm_pauses", s.storm_pauses());
    answer("liveness_kills", s.liveness_kills());
    answer("oom_kills", s.oom_kills());
    answer("memory_kills", s.memory_kills());
    answer("memory_over", s.memory_over());
    answer("stopped_reason", text(s.stopped_reason()));
    answer("last_exit", exit_text(s.last_exit()));
    answer("last_launch_error", text(s.last_launch_error()));
    answer("started_at", text(s.started_at()));
    answer("started_wall", s.started_wall());
    answer("restart_at", text(s.restart_at()));
    answer("last_decision", decision_text(s.last_decision()));
    answer("policy_state", policy_text(s.policy_state()));
    answer("tail", tail_text(s.tail()));
    answer("previous_tail", tail_text(s.previous_tail()));
    answer("tail_run", text(s.tail_run()));
    answer("previous_tail_run", text(s.previous_tail_run()));
    answer("has_schedule", s.has_schedule());
    answer("schedule", schedule_text(s.schedule()));
    answer("tick_due", text(s.tick_due()));
    return seen;
}

std::string differences(const Seen& before, const Seen& after) {
    std::string found;
    if (!(before.spec == after.spec)) {
        found += "spec: its values changed\n";
    }
    for (std::size_t i = 0; i < before.answers.size() && i < after.answers.size(); ++i) {
        if (before.answers[i] != after.answers[i]) {
            found += before.answers[i].first + ": " + before.answers[i].second + " → " +
                     after.answers[i].second + "\n";
        }
    }
    return found;
}

}  // namespace pkit::core::test::grid
