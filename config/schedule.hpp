#pragma once
// `schedule` (SPEC §12): when a oneshot job runs. A cron expression of five fields,
// a macro, or "every DURATION", parsed into plain, comparable values. Pure: the times
// they give are computed by the core (daemon/core/schedule.hpp), which knows the zone.

#include <bitset>
#include <chrono>
#include <expected>
#include <string>
#include <string_view>

namespace pkit::config {

// The five fields as sets of the values they allow: minute 0-59, hour 0-23,
// day-of-month 1-31, month 1-12, day-of-week 0-6 (Sunday 0; a 7 is stored as 0).
struct CronSpec {
    std::bitset<60> minutes;
    std::bitset<24> hours;
    std::bitset<32> days;    // bit 0 unused
    std::bitset<13> months;  // bit 0 unused
    std::bitset<7> weekdays;
    // A field is restricted when it does not start with `*` (crontab(5)): with both
    // day fields restricted a day matches when either does, else when both do.
    bool days_restricted = false;
    bool weekdays_restricted = false;
    // Likewise for minute and hour. Restricted both: a fixed-time job, which clock
    // changes treat as Debian's cron(8) does (daemon/core/schedule.hpp); @hourly is not.
    bool minutes_restricted = false;
    bool hours_restricted = false;
    bool fixed_time() const { return minutes_restricted && hours_restricted; }
    bool operator==(const CronSpec&) const = default;
};

struct Schedule {
    enum class Kind { none, cron, every };
    Kind kind = Kind::none;
    std::string expression;            // as written, for status and messages
    CronSpec cron;                     // kind cron (the macros too)
    std::chrono::nanoseconds every{};  // kind every: the period, at least 1 s
    bool enabled() const { return kind != Kind::none; }
    bool operator==(const Schedule&) const = default;
};

// The shortest period "every" takes: a job is a process start, not a busy loop.
inline constexpr std::chrono::seconds k_min_every{1};

// Parses a schedule, or says what is wrong, naming the field and quoting the
// expression: `"61 * * * *": minute 61 is out of range 0-59`.
std::expected<Schedule, std::string> parse_schedule(std::string_view text);

}  // namespace pkit::config
