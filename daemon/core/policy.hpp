#pragma once
// Restart policy as plain values and functions (SPEC §3): the backoff formula, the
// decaying storm score, the restart window, the predicates and the order of the gates.
// Time and randomness come in as arguments; nothing here reads a clock or an RNG.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/types.hpp"

namespace pkit::core {

// Delay of the `step`-th consecutive restart (step from 0):
// min(initial × factor^step, max_backoff) × j, j = 0.5 + u01 when jitter is on, else 1.
// `u01` is a uniform draw in [0, 1).
Duration backoff_delay(const config::RestartSpec& spec, int step, double u01);

// A failure score that decays exponentially with a half-life; each crash adds 1.
class StormScore {
public:
    // The score as of `now`.
    double value(TimePoint now, Duration half_life) const;
    // Adds one crash at `now`. Returns true when that brings the score to `threshold`
    // or above, in which case the score goes back to 0 (the pause has been taken).
    bool add_crash(TimePoint now, const config::StormSpec& spec);
    // Walks the fields for the upgrade's state file (daemon/core/persist.hpp).
    template <class Archive>
    void persist(Archive& a);

private:
    double m_score = 0.0;
    TimePoint m_at{};
};

// Restarts counted against max_restarts: over the whole life (within == 0) or in a
// sliding window. Only the times inside the window are kept, so it stays small.
class RestartWindow {
public:
    int count(TimePoint now, Duration within);
    void record(TimePoint now, Duration within);
    void reset() { *this = RestartWindow{}; }
    template <class Archive>
    void persist(Archive& a);

private:
    int m_total = 0;
    std::vector<TimePoint> m_times;
};

// The lines of one run that matched an output_matches pattern, recorded as each line
// arrived (SPEC §2), so that the gates never search the output again: for each
// predicate, the newest matching line as explain shows it (at most 80 bytes).
struct OutputMatches {
    std::optional<std::string> stop_when;
    std::optional<std::string> give_up_when;
};

// Searches one output line of a run with the patterns of `spec`'s stop_when and
// give_up_when, each once, in time linear in the line's length; a match is noted in
// `out`, replacing an older line.
void match_output_line(const config::ServiceSpec& spec, std::string_view line, OutputMatches& out);

// What is known of a completed run when the gates are checked.
struct RunResult {
    std::optional<int> code;
    std::optional<int> signal;
    std::optional<LaunchFailure> launch_error;
    KilledBy killed_by = KilledBy::none;
    Duration duration{};
    bool clean = false;
    bool oom_killed = false;  // the OOM killer killed a process of the run (SPEC §15)
    OutputMatches output;     // the run's output lines that matched, if any
};

// "killed by the OOM killer (memory_max 256MiB)", or without the parenthesis when the
// service sets no memory_max: how the log, explain and the gates word an OOM kill.
std::string oom_words(const std::optional<std::uint64_t>& memory_max);

// Returns, in plain words, which rule of `pred` matched the run (e.g. "exit 78 matched
// give_up_when.exit_codes"), or nullopt. `output_line` is the run's line that matched
// `pred.output_matches`, if one did; `table` names the predicate for the message.
std::optional<std::string> match_predicate(const config::Predicate& pred, const RunResult& run,
                                           const std::optional<std::string>& output_line,
                                           std::string_view table);

// The outcome of the gates for one completed run.
struct Decision {
    bool restart = false;
    StopReason reason = StopReason::policy_satisfied;  // when !restart
    std::string why;                                   // plain words, for explain and the log
    Duration delay{};                                  // when restart
    bool storm_tripped = false;
    int backoff_step = 0;      // the step the delay was computed from
    int restarts_counted = 0;  // restarts counted against max_restarts, this one included
    double storm_score = 0.0;  // the score after this crash (before a reset by a trip)
};

// The per-service memory the gates read and update.
struct PolicyState {
    int backoff_step = 0;
    RestartWindow window;
    StormScore storm;
};

// Checks the gates of SPEC §3 in order for one completed run and updates `state`
// (backoff step, window, storm score) for a restart. `u01` is the jitter draw.
// The predicates are `spec.stop_when` and `spec.give_up_when`; their output_matches
// are judged from `run.output`, never by searching the output here.
Decision decide(const config::ServiceSpec& spec, const RunResult& run, PolicyState& state,
                TimePoint now, double u01);

}  // namespace pkit::core
