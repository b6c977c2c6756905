// Cron times across clock changes (SPEC §12), as Debian's cron(8) runs them: a fixed-time
// job whose time a change forward skips runs at the change, one whose time a change back
// repeats runs once; a job with * in minute or hour runs at each local time shown, in
// real time; changes of 3 hours or more are corrections. Zones: Europe/Berlin and
// America/New_York by their rules (tests/unit/shell/io/test_zone.cpp checks the real
// zone data), and made-up jumps for the 3-hour bound.

#include <doctest/doctest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "daemon/core/schedule.hpp"

namespace pkit::core {
namespace {

std::int64_t at_utc(int y, int mo, int d, int h = 0, int mi = 0) {
    return days_from_civil({y, mo, d}) * 86400 + h * 3600 + mi * 60;
}

int year_of(std::int64_t t) {
    return civil_from_days(t >= 0 ? t / 86400 : (t - 86399) / 86400).year;
}

// The `nth` (1-based) Sunday of a month, or its last for nth 0, in days.
std::int64_t sunday_of(int year, int month, int nth) {
    if (nth == 0) {
        std::int64_t next_month =
            month == 12 ? days_from_civil({year + 1, 1, 1}) : days_from_civil({year, month + 1, 1});
        return next_month - 1 - weekday_of(next_month - 1);
    }
    std::int64_t first = days_from_civil({year, month, 1});
    return first + (7 - weekday_of(first)) % 7 + 7 * (nth - 1);
}

// Europe/Berlin since 1996: CET (+1 h), CEST (+2 h) from the last Sunday of March
// 01:00 UTC to the last Sunday of October 01:00 UTC.
std::int32_t berlin_rule(std::int64_t t) {
    int year = year_of(t);
    std::int64_t summer = sunday_of(year, 3, 0) * 86400 + 3600;
    std::int64_t winter = sunday_of(year, 10, 0) * 86400 + 3600;
    return t >= summer && t < winter ? 7200 : 3600;
}

// America/New_York since 2007: EST (-5 h), EDT (-4 h) from the second Sunday of March
// 02:00 EST (07:00 UTC) to the first Sunday of November 02:00 EDT (06:00 UTC).
std::int32_t new_york_rule(std::int64_t t) {
    int year = year_of(t);
    std::int64_t summer = sunday_of(year, 3, 2) * 86400 + 7 * 3600;
    std::int64_t winter = sunday_of(year, 11, 1) * 86400 + 6 * 3600;
    return t >= summer && t < winter ? -4 * 3600 : -5 * 3600;
}

// Made-up zones changing at 2026-06-01 01:00 UTC: forward by 2 h and by 4 h (from UTC),
// back by 2 h and by 4 h (to UTC).
constexpr std::int64_t k_jump = 1780275600;  // 2026-06-01 01:00 UTC
std::int32_t forward_2h(std::int64_t t) {
    return t < k_jump ? 0 : 7200;
}
std::int32_t forward_4h(std::int64_t t) {
    return t < k_jump ? 0 : 14400;
}
std::int32_t back_2h(std::int64_t t) {
    return t < k_jump ? 7200 : 0;
}
std::int32_t back_4h(std::int64_t t) {
    return t < k_jump ? 14400 : 0;
}

// Every time `expression` comes after `from` up to `until`, each counted on from the
// last, as pkitd arms one tick after another.
std::vector<std::int64_t> runs(const char* expression, std::int64_t from, std::int64_t until,
                               ZoneOffset zone) {
    auto schedule = config::parse_schedule(expression);
    REQUIRE_MESSAGE(schedule, expression);
    std::vector<std::int64_t> out;
    for (auto t = next_cron_time(schedule->cron, from, zone); t && *t <= until;
         t = next_cron_time(schedule->cron, *t, zone)) {
        out.push_back(*t);
        REQUIRE(out.size() < 100);
    }
    return out;
}

// "HH:MM" UTC of each time, with the day when it is not `day`: readable failures.
std::string clock_list(const std::vector<std::int64_t>& times, int day) {
    std::string out;
    for (std::int64_t t : times) {
        CivilDate date = civil_from_days(t / 86400);
        char text[32];
        std::snprintf(text, sizeof text, "%s%s%02d:%02d", out.empty() ? "" : " ",
                      date.day == day ? "" : (std::to_string(date.day) + "d").c_str(),
                      static_cast<int>(t % 86400 / 3600), static_cast<int>(t % 3600 / 60));
        out += text;
    }
    return out;
}

}  // namespace

TEST_CASE("the zone rules change where the zones do") {
    CHECK(berlin_rule(at_utc(2026, 3, 29, 1) - 1) == 3600);
    CHECK(berlin_rule(at_utc(2026, 3, 29, 1)) == 7200);
    CHECK(berlin_rule(at_utc(2026, 10, 25, 1) - 1) == 7200);
    CHECK(berlin_rule(at_utc(2026, 10, 25, 1)) == 3600);
    CHECK(new_york_rule(at_utc(2026, 3, 8, 7) - 1) == -18000);
    CHECK(new_york_rule(at_utc(2026, 3, 8, 7)) == -14400);
    CHECK(new_york_rule(at_utc(2026, 11, 1, 6) - 1) == -14400);
    CHECK(new_york_rule(at_utc(2026, 11, 1, 6)) == -18000);
    CHECK(k_jump == at_utc(2026, 6, 1, 1));
}

// Times below are UTC. Berlin 2026-03-29: 02:00 CET becomes 03:00 CEST at 01:00 UTC.
TEST_CASE("Europe/Berlin, summer time begins: the skipped hour's fixed times run at the change") {
    const auto from = at_utc(2026, 3, 28, 23, 50);  // 00:50 CET
    const auto until = at_utc(2026, 3, 29, 3, 0);
    // 02:30 never shows: the backup runs at the change (03:00 CEST), then at 02:30 CEST.
    CHECK(clock_list(runs("30 2 * * *", at_utc(2026, 3, 27, 12), at_utc(2026, 3, 31), berlin_rule),
                     29) == "28d01:30 01:00 30d00:30");
    // Two times in the gap: one run at the change.
    CHECK(clock_list(runs("0,30 2 * * *", from, at_utc(2026, 3, 30, 12), berlin_rule), 29) ==
          "01:00 30d00:00 30d00:30");
    // Wildcards run on the new time: every 30 and 60 minutes of real time go on.
    CHECK(clock_list(runs("*/30 * * * *", from, until, berlin_rule), 29) ==
          "00:00 00:30 01:00 01:30 02:00 02:30 03:00");
    CHECK(clock_list(runs("0 * * * *", from, until, berlin_rule), 29) == "00:00 01:00 02:00 03:00");
    CHECK(clock_list(runs("@hourly", from, until, berlin_rule), 29) == "00:00 01:00 02:00 03:00");
    // A wildcard time in the gap is skipped: */5 of hour 2 only.
    CHECK(runs("*/5 2 * * *", from, at_utc(2026, 3, 29, 22), berlin_rule).empty());
    // Midnight is 23:00 UTC in winter, 22:00 in summer.
    CHECK(clock_list(runs("@daily", at_utc(2026, 3, 28, 12), at_utc(2026, 3, 30, 12), berlin_rule),
                     29) == "28d23:00 22:00");
}

// Berlin 2026-10-25: 03:00 CEST becomes 02:00 CET at 01:00 UTC; 02:xx comes twice,
// first 00:00-01:00 UTC, then 01:00-02:00 UTC.
TEST_CASE("Europe/Berlin, summer time ends: fixed times run once, wildcards both times") {
    const auto from = at_utc(2026, 10, 24, 23, 40);  // 01:40 CEST
    const auto until = at_utc(2026, 10, 25, 2, 0);
    CHECK(
        clock_list(runs("30 2 * * *", at_utc(2026, 10, 24, 12), at_utc(2026, 10, 27), berlin_rule),
                   25) == "00:30 26d01:30");
    CHECK(clock_list(runs("*/30 * * * *", from, until, berlin_rule), 25) ==
          "00:00 00:30 01:00 01:30 02:00");
    CHECK(clock_list(runs("0 * * * *", from, until, berlin_rule), 25) == "00:00 01:00 02:00");
    CHECK(
        clock_list(runs("@daily", at_utc(2026, 10, 24, 12), at_utc(2026, 10, 26, 12), berlin_rule),
                   25) == "24d22:00 23:00");
    // pkitd started in the second 02:xx: a fixed time's first occurrence after it.
    CHECK(clock_list(runs("45 2 * * *", at_utc(2026, 10, 25, 1, 10), at_utc(2026, 10, 25, 12),
                          berlin_rule),
                     25) == "01:45");
    // Counting on from inside the first pass: the second pass comes before 03:00.
    CHECK(clock_list(runs("15 * * * *", at_utc(2026, 10, 25, 0, 40), until, berlin_rule), 25) ==
          "01:15");
}

// New York 2026-03-08: 02:00 EST becomes 03:00 EDT at 07:00 UTC.
TEST_CASE("America/New_York, daylight saving time begins") {
    const auto from = at_utc(2026, 3, 8, 5, 50);  // 00:50 EST
    const auto until = at_utc(2026, 3, 8, 8, 0);
    CHECK(clock_list(runs("30 2 * * *", at_utc(2026, 3, 7), at_utc(2026, 3, 10), new_york_rule),
                     8) == "7d07:30 07:00 9d06:30");
    CHECK(clock_list(runs("*/30 * * * *", from, until, new_york_rule), 8) ==
          "06:00 06:30 07:00 07:30 08:00");
    CHECK(clock_list(runs("0 * * * *", from, until, new_york_rule), 8) == "06:00 07:00 08:00");
    CHECK(clock_list(runs("30 1 * * *", from, at_utc(2026, 3, 10), new_york_rule), 8) ==
          "06:30 9d05:30");
    CHECK(clock_list(runs("@daily", at_utc(2026, 3, 7, 12), at_utc(2026, 3, 9, 12), new_york_rule),
                     8) == "05:00 9d04:00");
}

// New York 2026-11-01: 02:00 EDT becomes 01:00 EST at 06:00 UTC; 01:xx comes twice,
// first 05:00-06:00 UTC, then 06:00-07:00 UTC.
TEST_CASE("America/New_York, daylight saving time ends") {
    const auto from = at_utc(2026, 11, 1, 4, 50);  // 00:50 EDT
    const auto until = at_utc(2026, 11, 1, 7, 0);
    CHECK(clock_list(runs("30 1 * * *", at_utc(2026, 10, 31), at_utc(2026, 11, 3), new_york_rule),
                     1) == "31d05:30 05:30 2d06:30");
    CHECK(clock_list(runs("30 2 * * *", at_utc(2026, 10, 31), at_utc(2026, 11, 3), new_york_rule),
                     1) == "31d06:30 07:30 2d07:30");
    CHECK(clock_list(runs("*/30 * * * *", from, until, new_york_rule), 1) ==
          "05:00 05:30 06:00 06:30 07:00");
    CHECK(clock_list(runs("0 * * * *", from, until, new_york_rule), 1) == "05:00 06:00 07:00");
    CHECK(
        clock_list(runs("@daily", at_utc(2026, 10, 31, 12), at_utc(2026, 11, 2, 12), new_york_rule),
                   1) == "04:00 2d05:00");
    // pkitd started in the second 01:xx: the 01:30 after it.
    CHECK(clock_list(runs("30 1 * * *", at_utc(2026, 11, 1, 6, 10), at_utc(2026, 11, 1, 12),
                          new_york_rule),
                     1) == "06:30");
}

TEST_CASE("a change of 3 hours or more is a correction: nothing caught up, repeats run again") {
    const auto from = at_utc(2026, 5, 31, 12);
    const auto until = at_utc(2026, 6, 2, 1);
    // Forward 2 h (local 01:00 -> 03:00): 02:30 runs at the change; forward 4 h (01:00 ->
    // 05:00): skipped, as a wildcard time would be.
    CHECK(clock_list(runs("30 2 * * *", from, until, forward_2h), 1) == "01:00 2d00:30");
    CHECK(clock_list(runs("30 2 * * *", from, until, forward_4h), 1) == "22:30");
    // Back 2 h (local 03:00 -> 01:00): 02:30 once; back 4 h (05:00 -> 01:00): twice.
    CHECK(clock_list(runs("30 2 * * *", from, until, back_2h), 1) == "00:30");
    CHECK(clock_list(runs("30 2 * * *", from, until, back_4h), 1) == "31d22:30 02:30");
}

}  // namespace pkit::core
