#pragma once
// The times a schedule gives (SPEC §12), as pure functions. Cron times are local
// times in a zone the core cannot read (no clock, no file): the zone comes in as a
// function from a unix time to its offset from UTC, which the shell answers with
// localtime_r and tests with a rule of their own.

#include <cstdint>
#include <optional>

#include "config/schedule.hpp"
#include "daemon/core/types.hpp"

namespace pkit::core {

// The offset from UTC, in seconds, of the zone's local time at unix time `t`. A plain
// function (a std::function's call could throw, which the core must not).
using ZoneOffset = std::int32_t (*)(std::int64_t t);

// UTC: offset 0 at every time.
std::int32_t utc_offset(std::int64_t t);

// The civil calendar (proleptic Gregorian), days counted from 1970-01-01.
struct CivilDate {
    int year;
    int month;  // 1-12
    int day;    // 1-31
    bool operator==(const CivilDate&) const = default;
};
std::int64_t days_from_civil(CivilDate date);
CivilDate civil_from_days(std::int64_t days);
// 0 Sunday .. 6 Saturday.
int weekday_of(std::int64_t days);

// The first time after unix time `after` whose local time matches `cron`, in unix
// seconds; nullopt if nothing matches within 30 years. Clock changes of the zone as
// Debian's cron(8) treats them (SPEC §12):
//  - a job with `*` starting its minute or hour field (@hourly too) runs at each local
//    time the clock shows, in real time: not at the times a change forward skips, and
//    at the times a change back repeats both times they come (`*/30` keeps running every
//    30 minutes through a repeated hour);
//  - a fixed-time job (CronSpec::fixed_time) whose times fall in a skipped interval runs
//    once at the change, the first second of the new offset; a time that repeats comes
//    once, at its first occurrence after `after` (so counting on from it does not give
//    it again);
//  - a change of 3 hours or more is a correction: every job runs as a wildcard one.
// The zone changes at most once in any two days, by less than a day.
std::optional<std::int64_t> next_cron_time(const config::CronSpec& cron, std::int64_t after,
                                           const ZoneOffset& offset);

// A tick: its monotonic deadline and its wall time. A cron tick is due by the wall
// clock (`by_wall`): the shell's timer runs on the monotonic clock, so at its
// deadline the wall time is checked again, and a clock set back waits on.
struct Tick {
    TimePoint mono{};
    double wall = 0.0;
    bool by_wall = false;
};

// The next tick of `schedule` after `now`: "every D" at `epoch` (pkitd's start) plus
// the next whole multiple of D on the monotonic clock; cron at the next matching time
// after `after_wall` (now's wall time, or the last tick's if later, so a clock set
// back does not give a tick again). nullopt: no time comes.
std::optional<Tick> next_tick(const config::Schedule& schedule, Now now, TimePoint epoch,
                              double after_wall, const ZoneOffset& offset);

// A scheduled job's side of SPEC §12, kept by its Service as plain values.
struct ScheduleRecord {
    bool armed = false;      // ticks start episodes (disarmed: stopped, or autostart off)
    OptionalTime tick;       // the next tick's monotonic deadline, while armed
    double tick_wall = 0.0;  // its wall time (status `next`)
    bool by_wall = false;    // a cron tick: due by the wall clock
    std::optional<double> last_started;  // wall time of the latest episode's start
    std::optional<State> last_result;    // done or failed: how the latest episode ended
    std::optional<double> last_success;  // wall time the latest `done` episode ended
    std::uint64_t missed = 0;            // ticks that came while an episode ran
    std::uint64_t episodes_ended = 0;    // episodes ended done or failed while armed
    bool succeeded = false;              // an episode has ended done: `after` is met
};

// The record of a service that has none (never armed).
inline constexpr ScheduleRecord k_no_schedule{};

}  // namespace pkit::core
