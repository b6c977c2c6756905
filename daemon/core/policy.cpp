#include "daemon/core/policy.hpp"

#include <signal.h>

#include <algorithm>
#include <cmath>

#include "config/values.hpp"

namespace pkit::core {

namespace {

bool contains(const std::vector<int>& values, int value) {
    return std::find(values.begin(), values.end(), value) != values.end();
}

}  // namespace

Duration backoff_delay(const config::RestartSpec& spec, int step, double u01) {
    double base = config::to_seconds(spec.backoff_initial) * std::pow(spec.backoff_factor, step);
    double capped = std::min(base, config::to_seconds(spec.max_backoff));
    if (!std::isfinite(capped)) {
        capped = config::to_seconds(spec.max_backoff);
    }
    double j = spec.jitter ? 0.5 + std::clamp(u01, 0.0, 1.0) : 1.0;
    return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(capped * j));
}

double StormScore::value(TimePoint now, Duration half_life) const {
    if (m_score == 0.0 || half_life <= Duration::zero()) {
        return m_score;
    }
    double elapsed = std::max(0.0, config::to_seconds(now - m_at));
    return m_score * std::exp2(-elapsed / config::to_seconds(half_life));
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

namespace {

// A line as explain shows it: at most 80 bytes, cut on a UTF-8 character boundary.
std::string shown_line(std::string_view text) {
    constexpr std::size_t k_max = 80;
    if (text.size() <= k_max) {
        return std::string(text);
    }
    std::size_t cut = k_max - 3;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) {
        --cut;
    }
    return std::string(text.substr(0, cut)) + "...";
}

void match_one(const config::Predicate& pred, std::string_view line,
               std::optional<std::string>& out) {
    if (pred.output_matches && pred.output_matches->search(line)) {
        out = shown_line(line);
    }
}

}  // namespace

void match_output_line(const config::ServiceSpec& spec, std::string_view line, OutputMatches& out) {
    match_one(*spec.stop_when, line, out.stop_when);
    match_one(*spec.give_up_when, line, out.give_up_when);
}

std::optional<std::string> match_predicate(const config::Predicate& spec, const RunResult& run,
                                           const std::optional<std::string>& output_line,
                                           std::string_view table) {
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
    if (spec.output_matches && output_line) {
        return "output line \"" + *output_line + "\" matched " + std::string(table) +
               ".output_matches";
    }
    if (spec.memory && run.killed_by == KilledBy::memory) {
        std::string why = "a memory_max stop matched ";
        why += table;
        why += ".memory";
        return why;
    }
    if (spec.oom && run.oom_killed) {
        std::string why = "an OOM kill matched ";
        why += table;
        why += ".oom";
        return why;
    }
    return std::nullopt;
}

std::string oom_words(const std::optional<std::uint64_t>& memory_max) {
    std::string text = "killed by the OOM killer";
    if (memory_max) {
        text += " (memory_max ";
        text += config::format_size(*memory_max);
        text += ')';
    }
    return text;
}

namespace {

Decision end(StopReason reason, std::string why) {
    Decision d;
    d.restart = false;
    d.reason = reason;
    d.why = std::move(why);
    return d;
}

std::string describe_run(const RunResult& run, const config::ServiceSpec& spec) {
    if (run.launch_error) {
        return "launch failed (" + run.launch_error->message + ")";
    }
    if (run.oom_killed && run.killed_by == KilledBy::none) {
        // The main process, or one of the run's others: the OOM kill says more than
        // the exit it led to.
        std::string text = oom_words(spec.resources->memory_max);
        if (run.signal && *run.signal != SIGKILL) {
            text += "; the run was killed by ";
            text += config::signal_name(*run.signal);
        } else if (!run.signal) {
            text += "; the run exited ";
            text += std::to_string(run.code.value_or(-1));
        }
        return text;
    }
    if (run.killed_by == KilledBy::timeout) {
        return "the run timed out";
    }
    if (run.killed_by == KilledBy::liveness) {
        return "the run was killed by its liveness check";
    }
    if (run.killed_by == KilledBy::memory) {
        return "the run went over memory_max";
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

Decision decide(const config::ServiceSpec& spec, const RunResult& run, PolicyState& state,
                TimePoint now, double u01) {
    const bool crash = !run.clean;
    // What the window holds, on every decision: an ending one too (`show` and
    // `explain` word the same count), not only a restart.
    const auto& restart = spec.restart;
    const int counted = state.window.count(now, restart.within);
    auto end = [counted](StopReason reason, std::string why) {
        Decision d = core::end(reason, std::move(why));
        d.restarts_counted = counted;
        return d;
    };
    // 1. stop_when (not consulted for a liveness kill).
    if (run.killed_by != KilledBy::liveness) {
        if (auto why = match_predicate(*spec.stop_when, run, run.output.stop_when, "stop_when")) {
            return end(StopReason::predicate, *why);
        }
    }
    // 2. The policy.
    switch (spec.restart.policy) {
        case config::RestartPolicy::on_crash:
            if (!crash) {
                return end(StopReason::policy_satisfied,
                           describe_run(run, spec) + " is clean and the policy is on_crash");
            }
            break;
        case config::RestartPolicy::never:
            if (run.killed_by == KilledBy::liveness) {
                return end(StopReason::unhealthy,
                           "the run was killed by its liveness check and the policy is never");
            }
            if (run.killed_by == KilledBy::memory) {
                return end(StopReason::unhealthy,
                           "the run went over memory_max and the policy is never");
            }
            return end(StopReason::policy_satisfied,
                       describe_run(run, spec) + " and the policy is never");
        case config::RestartPolicy::always:
            break;
    }
    // 3. give_up_when, only for a crash that would be restarted.
    if (crash) {
        if (auto why =
                match_predicate(*spec.give_up_when, run, run.output.give_up_when, "give_up_when")) {
            return end(StopReason::gave_up, "gave up: " + *why);
        }
    }
    // 4. max_restarts: only the service's own crashes count against it.
    if (crash && restart.max_restarts >= 0 && counted >= restart.max_restarts) {
        std::string scope = restart.within > Duration::zero()
                                ? " in the " + config::format_duration(restart.within) + " window"
                                : "";
        return end(StopReason::restarts_exhausted,
                   describe_run(run, spec) + "; " + std::to_string(counted) + " of " +
                       std::to_string(restart.max_restarts) +
                       (restart.max_restarts == 1 ? " restart used" : " restarts used") + scope);
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
        if (spec.storm->enabled()) {
            d.storm_score = state.storm.value(now, spec.storm->decay) + 1.0;
            if (state.storm.add_crash(now, *spec.storm)) {
                d.storm_tripped = true;
                d.delay = *spec.storm->pause;
            }
        }
    } else {
        d.restarts_counted = counted;
    }
    d.why = describe_run(run, spec);
    return d;
}

}  // namespace pkit::core
