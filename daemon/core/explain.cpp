#include "daemon/core/explain.hpp"

#include <cstdio>

#include "config/values.hpp"

namespace pkit::core {

namespace {

std::string fixed(double value) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", value);
    return buf;
}

std::string clock_time(double wall) {
    std::time_t t = static_cast<std::time_t>(wall);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[16];
    std::strftime(buf, sizeof buf, "%H:%M:%S", &tm);
    return buf;
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

Explanation explain(const Supervisor& supervisor, std::size_t index, Now now) {
    const Service& s = supervisor.service(index);
    const Decision& d = s.last_decision();
    Explanation e;
    auto fact = [&](std::string key, FactValue value) {
        e.facts.emplace_back(std::move(key), std::move(value));
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

    switch (s.state()) {
        case State::waiting: {
            auto deps = supervisor.unsatisfied_dependencies(index);
            std::string words;
            for (const auto& n : deps) {
                words += (words.empty() ? "" : "; ") + dependency_words(supervisor, n, now);
            }
            e.text = deps.empty() ? "about to start run " + std::to_string(s.run() + 1) + "."
                                  : "waiting for " + words + " before run " +
                                        std::to_string(s.run() + 1) + ".";
            break;
        }
        case State::starting:
            e.text = "run " + std::to_string(s.run()) + " is starting and not ready yet.";
            break;
        case State::running:
            e.text = "running: run " + std::to_string(s.run()) + ", pid " +
                     std::to_string(s.pid()) + ", " + count_words(s.restarts(), "restart") +
                     " so far.";
            break;
        case State::stopping:
            e.text = "run " + std::to_string(s.run()) + " is being stopped.";
            break;
        case State::backoff: {
            double in = s.restart_at()
                            ? std::max(0.0, config::to_seconds(*s.restart_at() - now.mono))
                            : 0.0;
            fact("next_restart_in", in);
            e.text = "restart " + std::to_string(s.restarts()) + " in " + fixed(in) +
                     " s: backoff step " + std::to_string(d.backoff_step) + window_words(s, d) +
                     ". The last run: " + d.why + ".";
            break;
        }
        case State::storm_pause: {
            double in = s.restart_at()
                            ? std::max(0.0, config::to_seconds(*s.restart_at() - now.mono))
                            : 0.0;
            fact("next_restart_in", in);
            if (s.held_by_daemon()) {
                fact("daemon_storm_score", supervisor.daemon_storm_score(now.mono));
                e.text = "storm pause until " + clock_time(now.wall + in) +
                         ": the daemon-wide storm guard tripped (threshold " +
                         fixed(supervisor.daemon_spec().storm.threshold) +
                         "), every pending restart waits; restart " + std::to_string(s.restarts()) +
                         " in " + fixed(in) + " s.";
                break;
            }
            e.text = "storm pause until " + clock_time(now.wall + in) + ": score " +
                     fixed(d.storm_score) + " reached threshold " +
                     fixed(s.spec().storm->threshold) + "; restart " +
                     std::to_string(s.restarts()) + " in " + fixed(in) + " s.";
            break;
        }
        case State::stopped:
            e.text = "stopped by the operator (or autostart = false); `pkitctl start " + s.name() +
                     "` starts it.";
            break;
        case State::done:
        case State::failed: {
            std::string reason = s.stopped_reason() ? std::string(to_string(*s.stopped_reason()))
                                                    : std::string("unknown");
            fact("stopped", reason);
            e.text = std::string(s.state() == State::done ? "done" : "failed") + " (" + reason +
                     "): " + d.why + ". Not restarted until `pkitctl start " + s.name() + "`.";
            break;
        }
    }
    return e;
}

}  // namespace pkit::core
