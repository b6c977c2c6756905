// The zone of cron schedules: TZ's, read through localtime_r; UTC when TZ is unset
// (not /etc/localtime). Each case restores TZ.

#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>

#include "daemon/core/schedule.hpp"
#include "daemon/shell/io/zone.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

namespace {

// Sets TZ (or unsets it, for nullopt) for the scope, then puts the old value back.
class ScopedZoneTz {
public:
    explicit ScopedZoneTz(const std::optional<std::string>& tz) {
        if (const char* old = std::getenv("TZ")) {
            m_old = old;
        }
        if (tz) {
            ::setenv("TZ", tz->c_str(), 1);
        } else {
            ::unsetenv("TZ");
        }
        ::tzset();
    }
    ~ScopedZoneTz() {
        if (m_old) {
            ::setenv("TZ", m_old->c_str(), 1);
        } else {
            ::unsetenv("TZ");
        }
        ::tzset();
    }
    ScopedZoneTz(const ScopedZoneTz&) = delete;
    ScopedZoneTz& operator=(const ScopedZoneTz&) = delete;

private:
    std::optional<std::string> m_old;
};

std::int64_t berlin_case_utc(int y, int m, int d, int h) {
    return core::days_from_civil({y, m, d}) * 86400 + h * 3600;
}

}  // namespace

TEST_CASE("the cron zone is UTC without TZ, and TZ's offsets with it") {
    {
        ScopedZoneTz tz(std::nullopt);
        core::ZoneOffset zone = zone_from_environment();
        CHECK(zone(berlin_case_utc(2026, 7, 1, 12)) == 0);
    }
    if (::access("/usr/share/zoneinfo/Europe/Berlin", R_OK) != 0) {
        MESSAGE("no tzdata: Europe/Berlin not checked");
        return;
    }
    ScopedZoneTz tz(std::string("Europe/Berlin"));
    core::ZoneOffset zone = zone_from_environment();
    CHECK(zone(berlin_case_utc(2026, 1, 15, 12)) == 3600);
    CHECK(zone(berlin_case_utc(2026, 7, 15, 12)) == 7200);
    // Summer time from 2026-03-29 01:00 UTC.
    CHECK(zone(berlin_case_utc(2026, 3, 29, 1) - 1) == 3600);
    CHECK(zone(berlin_case_utc(2026, 3, 29, 1)) == 7200);
    // 02:30 does not come on the 29th of March: the job runs at the change (cron(8)).
    auto next = core::next_cron_time(config::parse_schedule("30 2 * * *")->cron,
                                     berlin_case_utc(2026, 3, 28, 2), zone);
    CHECK(next == berlin_case_utc(2026, 3, 29, 1));
}

TEST_CASE("cron times through New York's repeated hour, with the real zone data") {
    if (::access("/usr/share/zoneinfo/America/New_York", R_OK) != 0) {
        MESSAGE("no tzdata: America/New_York not checked");
        return;
    }
    ScopedZoneTz tz(std::string("America/New_York"));
    core::ZoneOffset zone = zone_from_environment();
    // 2026-11-01: 02:00 EDT becomes 01:00 EST at 06:00 UTC.
    auto every_half_hour = config::parse_schedule("*/30 * * * *")->cron;
    std::int64_t t = berlin_case_utc(2026, 11, 1, 4) + 50 * 60;
    std::string seen;
    for (int i = 0; i < 5; ++i) {
        t = *core::next_cron_time(every_half_hour, t, zone);
        seen += std::to_string((t / 60) % 1440) + " ";
    }
    // 05:00 05:30 06:00 06:30 07:00 UTC, in minutes of the day: every 30 minutes.
    CHECK(seen == "300 330 360 390 420 ");
    auto at_1_30 = config::parse_schedule("30 1 * * *")->cron;
    auto first = core::next_cron_time(at_1_30, berlin_case_utc(2026, 11, 1, 0), zone);
    CHECK(first == berlin_case_utc(2026, 11, 1, 5) + 1800);
    CHECK(core::next_cron_time(at_1_30, *first, zone) == berlin_case_utc(2026, 11, 2, 6) + 1800);
}

}  // namespace pkit::shell::test
