#include "daemon/core/explain.hpp"

#include <charconv>

#include "config/values.hpp"

namespace pkit::core {

namespace {

// "14:03:09": the UTC time of day of a wall-clock time in seconds since the epoch
// (POSIX time: every day 86,400 s). Arithmetic only: the core reads no time zone.
std::string clock_time(double wall) {
    constexpr long long k_day = 86400;
    long long second = ((static_cast<long long>(wall) % k_day) + k_day) % k_day;
    std::string text;
    for (long long part : {second / 3600, second / 60 % 60, second % 60}) {
        text +=
            (text.empty() ? "" : ":") + std::string(part < 10 ? "0" : "") + std::to_string(part);
    }
    return text;
}

std::string window_words(const Service& s, const Decision& d) {
    const auto& restart = s.spec().restart;
    if (restart.max_restarts < 0) {
        return "";
    }
    std::string text = "; " + std::to_string(d.restarts_counted) + " of " +
                       count_words(restart.max_restarts, "restart");
    if (restart.within > Duration::zero()) {
        text += " in the " + config::format_duration(restart.within) + " window";
    }
    return text;
}

// What a waiting dependent waits for, in words: "migrate to finish (running for 12 s)"
// for a oneshot job, "db to be ready" for a service, and what stands in the way when
// the dependency has ended without satisfying it.
std::string dependency_words(const Supervisor& supervisor, const std::string& name, Now now) {
    auto index = supervisor.find(name);
    if (!index) {
        return name + " to be ready";
    }
    const Service& d = supervisor.service(*index);
    const bool job = d.spec().type == config::ServiceType::oneshot;
    switch (d.state()) {
        case State::failed:
            return name + ", which failed (`pkitctl start " + name + "` runs it again)";
        case State::stopped:
            return name + ", which is stopped (`pkitctl start " + name + "` starts it)";
        case State::running:
        case State::starting:
            if (job && d.started_at()) {
                return name + " to finish (running for " +
                       std::to_string(
                           static_cast<long long>(config::to_seconds(now.mono - *d.started_at()))) +
                       " s)";
            }
            break;
        case State::scheduled:
            return name + " to end an episode done (scheduled: " + d.spec().schedule->expression +
                   ")";
        case State::paused:
            return name + ", which is paused (`pkitctl resume " + name + "` resumes it)";
        case State::waiting:
        case State::stopping:
        case State::backoff:
        case State::storm_pause:
        case State::done:
            break;
    }
    return name + (job ? " to finish" : " to be ready");
}

}  // namespace

std::string count_words(long long count, std::string_view noun) {
    return std::to_string(count) + " " + std::string(noun) + (count == 1 ? "" : "s");
}

std::string one_decimal(double value) {
    char buf[32];
    auto written = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::fixed, 1);
    if (written.ec != std::errc{}) {
        written = std::to_chars(buf, buf + sizeof buf, value);  // too large for fixed
    }
    return std::string(buf, written.ptr);
}

double restart_in(const Service& s, Now now) {
    return s.restart_at() ? std::max(0.0, config::to_seconds(*s.restart_at() - now.mono)) : 0.0;
}

std::string restart_words(const Service& s, Now now) {
    return "restart " + std::to_string(s.restarts()) + " in " + one_decimal(restart_in(s, now)) +
           " s";
}

namespace {

std::string waiting_text(const Supervisor& supervisor, std::size_t index, Now now) {
    const Service& s = supervisor.service(index);
    auto deps = supervisor.unsatisfied_dependencies(index);
    std::string words;
    for (const auto& n : deps) {
        words += (words.empty() ? "" : "; ") + dependency_words(supervisor, n, now);
    }
    return deps.empty()
               ? "about to start run " + std::to_string(s.run() + 1) + "."
               : "waiting for " + words + " before run " + std::to_string(s.run() + 1) + ".";
}

std::string storm_pause_text(const Supervisor& supervisor, const Service& s, Now now) {
    const Decision& d = s.last_decision();
    std::string until = "storm pause until " + clock_time(now.wall + restart_in(s, now));
    if (s.held_by_daemon()) {
        return until + ": the daemon-wide storm guard tripped (threshold " +
               one_decimal(supervisor.daemon_spec().storm.threshold) +
               "), every pending restart waits; " + restart_words(s, now) + ".";
    }
    return until + ": score " + one_decimal(d.storm_score) + " reached threshold " +
           one_decimal(s.spec().storm->threshold) + "; " + restart_words(s, now) + ".";
}

// A scheduled job between episodes: when the next one starts, and how the last ended.
std::string scheduled_text(const Service& s, Now now) {
    const ScheduleRecord& r = s.schedule();
    std::string text = "scheduled (" + s.spec().schedule->expression + "): ";
    if (r.tick) {
        text += "the next episode starts in " +
                config::format_duration(std::max(Duration::zero(), *r.tick - now.mono)) + ".";
    } else {
        text += "no time of the schedule comes.";
    }
    if (r.last_result) {
        text += " The last episode ended " + std::string(to_string(*r.last_result)) + " (" +
                stopped_words(s) + ")";
        text += s.last_decision().why.empty() ? "." : ": " + s.last_decision().why + ".";
    } else {
        text += " No episode has ended yet.";
    }
    if (r.missed > 0) {
        text += " " + std::to_string(r.missed) + (r.missed == 1 ? " tick was" : " ticks were") +
                " missed while an episode ran.";
    }
    return text;
}

// A paused run (SPEC §15): since when, and what the resume re-arms.
std::string paused_text(const Service& s, Now now) {
    const Service::PauseRecord& p = *s.pause_record();
    std::string text = paused_words(s, now);
    text += ": run ";
    text += std::to_string(s.run());
    text += " (pid ";
    text += std::to_string(s.pid());
    text += ") is frozen, its probes and deadlines held until `pkitctl resume ";
    text += s.name();
    text += "`, which ";
    text += p.starting ? "goes on waiting for it to be ready" : "lets it run on";
    std::string left;
    if (p.run_timeout_left) {
        left += "the run timeout ";
        left += config::format_duration(*p.run_timeout_left);
    }
    if (p.ready_timeout_left) {
        left += left.empty() ? "the ready timeout " : ", the ready timeout ";
        left += config::format_duration(*p.ready_timeout_left);
    }
    if (!left.empty()) {
        text += " with what was left of its deadlines (";
        text += left;
        text += ")";
    }
    text += ".";
    return text;
}

// The sentence of `explain`: what the service is doing and why, by state.
std::string state_text(const Supervisor& supervisor, std::size_t index, Now now) {
    const Service& s = supervisor.service(index);
    const Decision& d = s.last_decision();
    switch (s.state()) {
        case State::waiting:
            return waiting_text(supervisor, index, now);
        case State::starting:
            return "run " + std::to_string(s.run()) + " is starting and not ready yet.";
        case State::running:
            return "running: run " + std::to_string(s.run()) + ", pid " + std::to_string(s.pid()) +
                   ", " + count_words(s.restarts(), "restart") + " so far.";
        case State::stopping:
            return "run " + std::to_string(s.run()) + " is being stopped.";
        case State::backoff:
            return restart_words(s, now) + ": backoff step " + std::to_string(d.backoff_step) +
                   window_words(s, d) + ". The last run: " + d.why + ".";
        case State::storm_pause:
            return storm_pause_text(supervisor, s, now);
        case State::stopped:
            return "stopped by the operator (or autostart = false); `pkitctl start " + s.name() +
                   "` starts it.";
        case State::scheduled:
            return scheduled_text(s, now);
        case State::paused:
            return paused_text(s, now);
        case State::done:
        case State::failed:
            return std::string(s.state() == State::done ? "done" : "failed") + " (" +
                   stopped_words(s) + "): " + d.why + ". Not restarted until `pkitctl start " +
                   s.name() + "`.";
    }
    return "";
}

}  // namespace

std::string paused_words(const Service& s, Now now) {
    const Service::PauseRecord* p = s.pause_record();
    if (p == nullptr) {
        return "not paused";
    }
    std::string text = "paused by the operator since ";
    text += clock_time(p->since_wall);
    text += " UTC (";
    text += config::format_duration(std::max(Duration::zero(), now.mono - p->since));
    text += " ago)";
    return text;
}

std::string stopped_words(const Service& s) {
    return s.stopped_reason() ? std::string(to_string(*s.stopped_reason())) : "unknown";
}

Explanation explain(const Supervisor& supervisor, std::size_t index, Now now) {
    const Service& s = supervisor.service(index);
    const Decision& d = s.last_decision();
    Explanation e;
    auto fact = [&](std::string_view key, FactValue value) {
        e.facts.emplace_back(std::string(key), std::move(value));
    };
    fact("state", std::string(to_string(s.state())));
    fact("run", static_cast<std::int64_t>(s.run()));
    fact("restarts", static_cast<std::int64_t>(s.restarts()));
    fact("max_restarts", static_cast<std::int64_t>(s.spec().restart.max_restarts));
    fact("restarts_counted", static_cast<std::int64_t>(d.restarts_counted));
    fact("backoff_step", static_cast<std::int64_t>(d.backoff_step));
    fact("decision", d.why);
    if (s.spec().storm->enabled()) {
        fact("storm_score", s.policy_state().storm.value(now.mono, s.spec().storm->decay));
        fact("storm_threshold", s.spec().storm->threshold);
    }
    add_definition_facts(s.spec(), e.facts);
    if (s.state() == State::backoff || s.state() == State::storm_pause) {
        fact("next_restart_in", restart_in(s, now));
    }
    if (s.held_by_daemon() && s.state() == State::storm_pause) {
        fact("daemon_storm_score", supervisor.daemon_storm_score(now.mono));
    }
    if (s.state() == State::done || s.state() == State::failed) {
        fact("stopped", stopped_words(s));
    }
    if (const Service::PauseRecord* p = s.pause_record()) {
        fact("paused_since", p->since_wall);
        fact("paused_for", config::to_seconds(std::max(Duration::zero(), now.mono - p->since)));
    }
    if (s.has_schedule()) {
        fact("schedule", s.spec().schedule->expression);
        fact("missed", static_cast<std::int64_t>(s.schedule().missed));
        if (s.schedule().tick) {
            fact("next_run_in", config::to_seconds(*s.schedule().tick - now.mono));
        }
        // The next three times, for `show`: next_run_1 .. next_run_3, unix seconds.
        const std::vector<double> upcoming = supervisor.upcoming_ticks(index, 3);
        for (std::size_t k = 0; k < upcoming.size(); ++k) {
            fact("next_run_" + std::to_string(k + 1), upcoming[k]);
        }
        if (s.schedule().last_result) {
            fact("last_result", std::string(to_string(*s.schedule().last_result)));
        }
    }
    e.text = state_text(supervisor, index, now);
    return e;
}

}  // namespace pkit::core
