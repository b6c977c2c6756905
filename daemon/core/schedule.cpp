// Civil dates, the next time a cron expression matches, and the next tick.

#include "daemon/core/schedule.hpp"

#include <array>
#include <cmath>

namespace pkit::core {
namespace {

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
    std::int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

bool day_matches(const config::CronSpec& cron, int day, int weekday) {
    bool dom = cron.days[static_cast<std::size_t>(day)];
    bool dow = cron.weekdays[static_cast<std::size_t>(weekday)];
    // crontab(5): both restricted, either matches; else both must (an unrestricted
    // field matches every day anyway).
    if (cron.days_restricted && cron.weekdays_restricted) {
        return dom || dow;
    }
    return dom && dow;
}

constexpr std::int64_t k_day = 86400;
constexpr int k_minutes_a_day = 1440;
// cron(8): a change of the clock by 3 hours or more is a correction, not a clock change
// of the zone (no catching up, no skipping of repeated times).
constexpr std::int64_t k_correction = 3 * 3600;

// The first local minute at or after `minute` that `cron` matches (month, day, hour,
// minute), skipping a whole month, day or hour that cannot; nullopt past `last_year`.
std::optional<std::int64_t> next_match(const config::CronSpec& cron, std::int64_t minute,
                                       int last_year) {
    while (true) {
        std::int64_t days = floor_div(minute, k_minutes_a_day);
        int of_day = static_cast<int>(minute - days * k_minutes_a_day);
        CivilDate date = civil_from_days(days);
        if (date.year > last_year) {
            return std::nullopt;
        }
        if (!cron.months[static_cast<std::size_t>(date.month)]) {
            CivilDate next = date.month == 12 ? CivilDate{date.year + 1, 1, 1}
                                              : CivilDate{date.year, date.month + 1, 1};
            minute = days_from_civil(next) * k_minutes_a_day;
            continue;
        }
        if (!day_matches(cron, date.day, weekday_of(days))) {
            minute = (days + 1) * k_minutes_a_day;
            continue;
        }
        int hour = of_day / 60;
        if (!cron.hours[static_cast<std::size_t>(hour)]) {
            minute = days * k_minutes_a_day + (hour + 1) * 60;
            continue;
        }
        int m = of_day % 60;
        while (m < 60 && !cron.minutes[static_cast<std::size_t>(m)]) {
            ++m;
        }
        if (m == 60) {
            minute = days * k_minutes_a_day + (hour + 1) * 60;
            continue;
        }
        return days * k_minutes_a_day + hour * 60 + m;
    }
}

// The unix times that show local time `local` (u + offset(u) == local), given the
// offsets a day either side of it: `any` whether one does, `best` the earliest after
// `after`. None in a gap, two in a repeated interval.
struct Showings {
    bool any = false;
    std::optional<std::int64_t> best;
};
Showings showings(std::int64_t local, std::int32_t before, std::int32_t later, std::int64_t after,
                  const ZoneOffset& offset) {
    Showings out;
    for (std::int32_t candidate : {before, later}) {
        std::int64_t u = local - candidate;
        if (offset(u) != candidate) {
            continue;
        }
        out.any = true;
        if (u > after && (!out.best || u < *out.best)) {
            out.best = u;
        }
    }
    return out;
}

// The first second of (low, high] whose offset differs from low's: the change between
// them (there is one, and only one).
std::int64_t first_second_of(std::int64_t low, std::int64_t high, const ZoneOffset& offset) {
    const std::int32_t old_offset = offset(low);
    while (high - low > 1) {
        std::int64_t middle = low + (high - low) / 2;
        if (offset(middle) == old_offset) {
            low = middle;
        } else {
            high = middle;
        }
    }
    return high;
}

}  // namespace

std::int32_t utc_offset(std::int64_t) {
    return 0;
}

// Howard Hinnant's algorithms (chrono-compatible low-level date algorithms).
std::int64_t days_from_civil(CivilDate date) {
    std::int64_t y = date.year - (date.month <= 2 ? 1 : 0);
    std::int64_t era = floor_div(y, 400);
    std::int64_t yoe = y - era * 400;
    std::int64_t mp = (date.month + 9) % 12;
    std::int64_t doy = (153 * mp + 2) / 5 + date.day - 1;
    std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

CivilDate civil_from_days(std::int64_t days) {
    std::int64_t z = days + 719468;
    std::int64_t era = floor_div(z, 146097);
    std::int64_t doe = z - era * 146097;
    std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    std::int64_t mp = (5 * doy + 2) / 153;
    int day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
    int month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
    int year = static_cast<int>(yoe + era * 400 + (month <= 2 ? 1 : 0));
    return {year, month, day};
}

int weekday_of(std::int64_t days) {
    std::int64_t w = (days + 4) % 7;  // 1970-01-01 was a Thursday
    return static_cast<int>(w < 0 ? w + 7 : w);
}

std::optional<std::int64_t> next_cron_time(const config::CronSpec& cron, std::int64_t after,
                                           const ZoneOffset& offset) {
    // Local minutes are searched in order from a start, each mapped back to the unix
    // times that show it. Zones change at most once in two days and their offsets span
    // less than a day (and so less than a change), so the offsets a day either side of a
    // local time are the only candidates, and a day ahead of `after` shows whether the
    // clock goes back soon.
    const bool fixed = cron.fixed_time();
    const std::int32_t now_offset = offset(after);
    const std::int32_t ahead = offset(after + k_day);
    // After the clock goes back, the local times it shows again come after `after` too:
    // they count for a wildcard job, and for every job after a correction. So the search
    // starts from the earlier local time then.
    std::int32_t start_offset = now_offset;
    if (ahead < now_offset && (!fixed || now_offset - ahead >= k_correction)) {
        start_offset = ahead;
    }
    std::int64_t minute = floor_div(after + start_offset, 60) + 1;
    const int last_year = civil_from_days(floor_div(minute, k_minutes_a_day)).year + 30;
    while (true) {
        auto found = next_match(cron, minute, last_year);
        if (!found) {
            return std::nullopt;
        }
        minute = *found;
        const std::int64_t local = minute * 60;
        const std::int32_t before = offset(local - k_day);
        const std::int32_t later = offset(local + k_day);
        auto shown = showings(local, before, later, after, offset);
        if (shown.best) {
            // Near a change local order and real order can differ by the change: a later
            // local time within it may come first (the rest of the first pass through a
            // repeated hour, before its second pass).
            const std::int64_t span = (later > before ? later - before : before - later) / 60;
            for (auto other = next_match(cron, minute + 1, last_year);
                 other && *other <= minute + span;
                 other = next_match(cron, *other + 1, last_year)) {
                auto more = showings(*other * 60, offset(*other * 60 - k_day),
                                     offset(*other * 60 + k_day), after, offset);
                if (more.best && *more.best < *shown.best) {
                    shown.best = more.best;
                }
            }
            return shown.best;
        }
        // A local time no clock shows: skipped by a change forward. A fixed-time job runs
        // at the change unless the change is a correction.
        if (!shown.any && fixed && later > before && later - before < k_correction) {
            const std::int64_t change = first_second_of(local - later, local - before, offset);
            if (change > after) {
                return change;
            }
        }
        ++minute;
    }
}

std::optional<Tick> next_tick(const config::Schedule& schedule, Now now, TimePoint epoch,
                              double after_wall, const ZoneOffset& offset) {
    switch (schedule.kind) {
        case config::Schedule::Kind::none:
            return std::nullopt;
        case config::Schedule::Kind::every: {
            const Duration period = schedule.every;
            const Duration since = now.mono - epoch;
            const auto k = since < Duration::zero() ? 0 : since / period + 1;
            Tick tick;
            tick.mono = epoch + period * k;
            tick.wall = now.wall + std::chrono::duration<double>(tick.mono - now.mono).count();
            return tick;
        }
        case config::Schedule::Kind::cron: {
            auto at = next_cron_time(schedule.cron,
                                     static_cast<std::int64_t>(std::floor(after_wall)), offset);
            if (!at) {
                return std::nullopt;
            }
            Tick tick;
            tick.wall = static_cast<double>(*at);
            tick.mono = now.mono + std::chrono::round<Duration>(
                                       std::chrono::duration<double>(tick.wall - now.wall));
            tick.by_wall = true;
            return tick;
        }
    }
    return std::nullopt;
}

}  // namespace pkit::core
