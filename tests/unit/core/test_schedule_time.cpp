// The times a schedule gives (SPEC §12): month ends, a leap day, cron's either-day
// rule, steps (clock changes: test_schedule_clock_changes.cpp).

#include <doctest/doctest.h>

#include <vector>

#include "daemon/core/schedule.hpp"
#include "tests/unit/core/fake.hpp"

namespace pkit::core {
namespace {

using namespace std::chrono_literals;

std::int64_t utc(int y, int mo, int d, int h = 0, int mi = 0) {
    return days_from_civil({y, mo, d}) * 86400 + h * 3600 + mi * 60;
}

std::int32_t utc_zone(std::int64_t) {
    return 0;
}

// The last Sunday of a month, in days.
std::int64_t last_sunday(int year, int month) {
    std::int64_t last = days_from_civil({year, month, 31});
    return last - weekday_of(last);
}

config::CronSpec cron(const char* text) {
    auto s = config::parse_schedule(text);
    REQUIRE_MESSAGE(s, text);
    return s->cron;
}

std::optional<std::int64_t> next(const char* text, std::int64_t after,
                                 const ZoneOffset& zone = utc_zone) {
    return next_cron_time(cron(text), after, zone);
}

// One row of a table: after `after`, `expression` next matches at `expected`.
struct CronRow {
    const char* expression;
    std::int64_t after;
    std::int64_t expected;
};

void check_rows(const std::vector<CronRow>& rows, ZoneOffset zone) {
    for (const CronRow& row : rows) {
        CAPTURE(row.expression);
        CAPTURE(row.after);
        CHECK(next(row.expression, row.after, zone) == row.expected);
    }
}

}  // namespace

TEST_CASE("the civil calendar round-trips and knows weekdays") {
    CHECK(days_from_civil({1970, 1, 1}) == 0);
    CHECK(civil_from_days(0) == CivilDate{1970, 1, 1});
    CHECK(civil_from_days(days_from_civil({2028, 2, 29})) == CivilDate{2028, 2, 29});
    CHECK(civil_from_days(days_from_civil({2028, 2, 29}) + 1) == CivilDate{2028, 3, 1});
    CHECK(civil_from_days(days_from_civil({2100, 2, 28}) + 1) == CivilDate{2100, 3, 1});
    CHECK(weekday_of(0) == 4);
    CHECK(weekday_of(days_from_civil({2026, 3, 29})) == 0);
    CHECK(weekday_of(-1) == 3);
    CHECK(last_sunday(2026, 3) == days_from_civil({2026, 3, 29}));
    CHECK(last_sunday(2026, 10) == days_from_civil({2026, 10, 25}));
}

TEST_CASE("cron times: fields, steps, names and month ends") {
    check_rows(
        {
            {"*/15 * * * *", utc(2026, 1, 1, 10, 7), utc(2026, 1, 1, 10, 15)},
            {"*/15 * * * *", utc(2026, 1, 1, 10, 15), utc(2026, 1, 1, 10, 30)},
            {"*/15 * * * *", utc(2026, 1, 1, 23, 45), utc(2026, 1, 2, 0, 0)},
            {"0 8-18/4 * * *", utc(2026, 1, 1, 13, 0), utc(2026, 1, 1, 16, 0)},
            {"0 8-18/4 * * *", utc(2026, 1, 1, 16, 0), utc(2026, 1, 2, 8, 0)},
            {"@hourly", utc(2026, 1, 1, 10, 0) + 59, utc(2026, 1, 1, 11, 0)},
            {"@daily", utc(2026, 12, 31, 0, 0), utc(2027, 1, 1, 0, 0)},
            {"@weekly", utc(2026, 3, 1, 0, 0), utc(2026, 3, 8, 0, 0)},
            {"@monthly", utc(2026, 1, 31, 12, 0), utc(2026, 2, 1, 0, 0)},
            {"@yearly", utc(2026, 1, 1, 0, 0), utc(2027, 1, 1, 0, 0)},
            // Month ends: the 31st skips the months without one.
            {"0 0 31 * *", utc(2026, 3, 31, 0, 0), utc(2026, 5, 31, 0, 0)},
            {"0 0 31 * *", utc(2026, 7, 31, 0, 0), utc(2026, 8, 31, 0, 0)},
            {"0 0 30 * *", utc(2026, 1, 30, 0, 0), utc(2026, 3, 30, 0, 0)},
            // The leap day comes every four years.
            {"0 12 29 2 *", utc(2026, 3, 1), utc(2028, 2, 29, 12, 0)},
            {"0 12 29 feb *", utc(2028, 2, 29, 12, 0), utc(2032, 2, 29, 12, 0)},
            {"59 23 28 2 *", utc(2028, 2, 28, 23, 59), utc(2029, 2, 28, 23, 59)},
            // Names and Sunday as 0 or 7.
            {"0 9 * * mon-fri", utc(2026, 3, 6, 9, 0), utc(2026, 3, 9, 9, 0)},
            {"0 9 * * 7", utc(2026, 3, 2), utc(2026, 3, 8, 9, 0)},
            {"0 9 * * sun", utc(2026, 3, 2), utc(2026, 3, 8, 9, 0)},
            {"0 0 1 jan-mar/2 *", utc(2026, 1, 1), utc(2026, 3, 1)},
            {"0 0 1 jan-mar/2 *", utc(2026, 3, 1), utc(2027, 1, 1)},
            // The either-day rule: both restricted, either matches (2026-03-02 is a Monday).
            {"0 0 1-7 * mon", utc(2026, 3, 2), utc(2026, 3, 3)},
            {"0 0 13 * fri", utc(2026, 2, 1), utc(2026, 2, 6)},
            {"0 0 13 * fri", utc(2026, 3, 6), utc(2026, 3, 13)},
            {"0 0 1 * mon", utc(2026, 3, 2), utc(2026, 3, 9)},
            {"0 0 1 * mon", utc(2026, 3, 30), utc(2026, 4, 1)},
            // A field starting with * is unrestricted: both must match (odd days, Mondays).
            {"0 0 */2 * mon", utc(2026, 3, 2), utc(2026, 3, 9)},
            {"0 0 * * mon", utc(2026, 3, 2), utc(2026, 3, 9)},
            {"0 0 1 * *", utc(2026, 3, 2), utc(2026, 4, 1)},
        },
        utc_zone);
}

TEST_CASE("ticks: every D counts from the epoch on the monotonic clock") {
    auto every = config::parse_schedule("every 10s");
    REQUIRE(every);
    const ZoneOffset zone = utc_zone;
    auto t = next_tick(*every, test::at(25), test::mono(0), 0, zone);
    REQUIRE(t);
    CHECK(test::seconds(t->mono) == 30.0);
    CHECK(t->wall == doctest::Approx(1030.0));
    CHECK_FALSE(t->by_wall);
    CHECK(test::seconds(next_tick(*every, test::at(30), test::mono(0), 0, zone)->mono) == 40.0);
    CHECK(test::seconds(next_tick(*every, test::at(0), test::mono(0), 0, zone)->mono) == 10.0);
}

TEST_CASE("ticks: cron is due by the wall clock, after the later of now and the last tick") {
    auto daily = config::parse_schedule("@daily");
    REQUIRE(daily);
    const ZoneOffset zone = utc_zone;
    // Wall time 1000 + s on the fake clock: the next midnight is 86400.
    auto t = next_tick(*daily, test::at(10), test::mono(0), 1010, zone);
    REQUIRE(t);
    CHECK(t->by_wall);
    CHECK(t->wall == 86400.0);
    CHECK(test::seconds(t->mono) == doctest::Approx(86400.0 - 1000.0));
    // A clock set back: counted on from the last tick, not from now.
    auto later = next_tick(*daily, test::at(10), test::mono(0), 86400, zone);
    CHECK(later->wall == 2 * 86400.0);
    // No time comes: nullopt (a zone whose offsets never show 00:00 is contrived;
    // the never-matching expressions are refused by the parser).
}

}  // namespace pkit::core
