#include "daemon/core/policy.hpp"

#include <algorithm>
#include <cmath>

#include "config/values.hpp"

namespace pkit::core {

namespace {

double seconds(Duration d) {
    return std::chrono::duration<double>(d).count();
}

bool contains(const std::vector<int>& values, int value) {
    return std::find(values.begin(), values.end(), value) != values.end();
}

}  // namespace

Duration backoff_delay(const config::RestartSpec& spec, int step, double u01) {
    double base = seconds(spec.backoff_initial) * std::pow(spec.backoff_factor, step);
    double capped = std::min(base, seconds(spec.max_backoff));
    if (!std::isfinite(capped)) {
        capped = seconds(spec.max_backoff);
    }
    double j = spec.jitter ? 0.5 + std::clamp(u01, 0.0, 1.0) : 1.0;
    return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(capped * j));
}

double StormScore::value(TimePoint now, Duration half_life) const {
    if (m_score == 0.0 || half_life <= Duration::zero()) {
        return m_score;
    }
    double elapsed = std::max(0.0, seconds(now - m_at));
    return m_score * std::exp2(-elapsed / seconds(half_life));
}

bool StormScore::add_crash(TimePoint now, const config::StormSpec& spec) {
    m_score = value(now, spec.decay) + 1.0;
    m_at = now;
    if (m_score >= spec.threshold) {
        m_score = 0.0;
        return true;
    }
    return false;
}

int RestartWindow::count(TimePoint now, Duration within) {
    if (within <= Duration::zero()) {
        return m_total;
    }
    // A restart decided exactly `within` ago has left the window.
    auto first_inside =
        std::find_if(m_times.begin(), m_times.end(), [&](TimePoint t) { return now - t < within; });
    m_times.erase(m_times.begin(), first_inside);
    return static_cast<int>(m_times.size());
}

void RestartWindow::record(TimePoint now, Duration within) {
    ++m_total;
    if (within > Duration::zero()) {
        m_times.push_back(now);
    }
}

CompiledPredicate CompiledPredicate::compile(const config::Predicate& spec) {
    CompiledPredicate compiled{&spec, std::nullopt};
    if (spec.output_matches) {
        // The loader has already compiled it once: an invalid pattern never gets here.
        try {
            compiled.output_re.emplace(*spec.output_matches, std::regex::ECMAScript);
        } catch (const std::regex_error&) {
            compiled.output_re.reset();
        }
    }
    return compiled;
}

std::optional<std::string> match_predicate(const CompiledPredicate& pred, const RunResult& run,
                                           std::string_view table) {
    if (pred.spec == nullptr) {
        return std::nullopt;
    }
    const config::Predicate& spec = *pred.spec;
    if (run.code && contains(spec.exit_codes, *run.code)) {
        return "exit " + std::to_string(*run.code) + " matched " + std::string(table) +
               ".exit_codes";
    }
    if (run.signal && contains(spec.signals, *run.signal)) {
        return config::signal_name(*run.signal) + " matched " + std::string(table) + ".signals";
    }
    if (run.launch_error) {
        bool listed = std::find(spec.launch_errors.begin(), spec.launch_errors.end(),
                                run.launch_error->kind) != spec.launch_errors.end();
        if (spec.any_launch_error || listed) {
            return "launch error " + std::string(config::to_string(run.launch_error->kind)) +
                   " matched " + std::string(table) + ".launch_errors";
        }
    }
    if (pred.output_re && run.tail != nullptr) {
        for (std::size_t i = run.tail->size(); i-- > 0;) {
            const std::string& text = run.tail->at(i).text;
            if (std::regex_search(text, *pred.output_re)) {
                std::string shown = text.size() > 80 ? text.substr(0, 77) + "..." : text;
                return "output line \"" + shown + "\" matched " + std::string(table) +
                       ".output_matches";
            }
        }
    }
    return std::nullopt;
}

namespace {

Decision end(StopReason reason, std::string why) {
    Decision d;
    d.restart = false;
    d.reason = reason;
    d.why = std::move(why);
    return d;
}

std::string describe_run(const RunResult& run) {
    if (run.launch_error) {
        return "launch failed (" + run.launch_error->message + ")";
    }
    if (run.killed_by == KilledBy::timeout) {
        return "the run timed out";
    }
    if (run.killed_by == KilledBy::liveness) {
        return "the run was killed by its liveness check";
    }
    if (run.killed_by == KilledBy::ready_timeout) {
        return "the run was not ready in time";
    }
    if (run.signal) {
        return "killed by " + config::signal_name(*run.signal);
    }
    return "exit " + std::to_string(run.code.value_or(-1));
}

}  // namespace

Decision decide(const config::ServiceSpec& spec, const CompiledPredicate& stop_when,
                const CompiledPredicate& give_up_when, const RunResult& run, PolicyState& state,
                TimePoint now, double u01) {
    const bool crash = !run.clean;
    // 1. stop_when (not consulted for a liveness kill).
    if (run.killed_by != KilledBy::liveness) {
        if (auto why = match_predicate(stop_when, run, "stop_when")) {
            return end(StopReason::predicate, *why);
        }
    }
    // 2. The policy.
    switch (spec.restart.policy) {
        case config::RestartPolicy::on_crash:
            if (!crash) {
                return end(StopReason::policy_satisfied,
                           describe_run(run) + " is clean and the policy is on_crash");
            }
            break;
        case config::RestartPolicy::never:
            if (run.killed_by == KilledBy::liveness) {
                return end(StopReason::unhealthy,
                           "the run was killed by its liveness check and the policy is never");
            }
            return end(StopReason::policy_satisfied,
                       describe_run(run) + " and the policy is never");
        case config::RestartPolicy::always:
            break;
    }
    // 3. give_up_when, only for a crash that would be restarted.
    if (crash) {
        if (auto why = match_predicate(give_up_when, run, "give_up_when")) {
            return end(StopReason::gave_up, "gave up: " + *why);
        }
    }
    // 4. max_restarts: only the service's own crashes count against it.
    const auto& restart = spec.restart;
    int counted = state.window.count(now, restart.within);
    if (crash && restart.max_restarts >= 0 && counted >= restart.max_restarts) {
        std::string scope = restart.within > Duration::zero()
                                ? " in the " + config::format_duration(restart.within) + " window"
                                : "";
        return end(StopReason::restarts_exhausted,
                   describe_run(run) + "; " + std::to_string(counted) + " of " +
                       std::to_string(restart.max_restarts) + " restarts used" + scope);
    }
    // 5. Restart after the delay.
    Decision d;
    d.restart = true;
    if (run.duration >= restart.reset_after) {
        state.backoff_step = 0;
    }
    d.backoff_step = state.backoff_step;
    d.delay = backoff_delay(restart, state.backoff_step, u01);
    if (state.backoff_step < 64) {
        ++state.backoff_step;
    }
    if (crash) {
        state.window.record(now, restart.within);
        d.restarts_counted = counted + 1;
        if (spec.storm.enabled()) {
            d.storm_score = state.storm.value(now, spec.storm.decay) + 1.0;
            if (state.storm.add_crash(now, spec.storm)) {
                d.storm_tripped = true;
                d.delay = *spec.storm.pause;
            }
        }
    } else {
        d.restarts_counted = counted;
    }
    d.why = describe_run(run);
    return d;
}

}  // namespace pkit::core
