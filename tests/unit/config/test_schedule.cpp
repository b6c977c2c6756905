// `schedule` (SPEC §12): cron's five fields, its macros, "every DURATION", and the
// errors that name the field.

#include "tests/unit/config/config_doctest.hpp"

#include "config/schedule.hpp"

using namespace pkit::config;
using namespace std::chrono_literals;

namespace {

CronSpec cron_of(const char* text) {
    auto s = parse_schedule(text);
    REQUIRE_MESSAGE(s.has_value(), text);
    REQUIRE(s->kind == Schedule::Kind::cron);
    return s->cron;
}

std::string error_of(const char* text) {
    auto s = parse_schedule(text);
    REQUIRE_MESSAGE(!s.has_value(), text);
    return s.error();
}

template <std::size_t N>
std::string bits(const std::bitset<N>& set) {
    std::string out;
    for (std::size_t i = 0; i < N; ++i) {
        if (set[i]) {
            out += (out.empty() ? "" : ",") + std::to_string(i);
        }
    }
    return out;
}

}  // namespace

TEST_CASE("cron fields take lists, ranges, steps and names") {
    CronSpec c = cron_of("*/15 8-18/4 1,15 jan-mar/2 mon-fri");
    CHECK(bits(c.minutes) == "0,15,30,45");
    CHECK(bits(c.hours) == "8,12,16");
    CHECK(bits(c.days) == "1,15");
    CHECK(bits(c.months) == "1,3");
    CHECK(bits(c.weekdays) == "1,2,3,4,5");
    CHECK(c.days_restricted);
    CHECK(c.weekdays_restricted);

    CHECK(bits(cron_of("5/20 * * * *").minutes) == "5,25,45");
    CHECK(bits(cron_of("0 0 * * 7").weekdays) == "0");
    CHECK(bits(cron_of("0 0 * * 5-7").weekdays) == "0,5,6");
    CHECK(bits(cron_of("0 0 * * SUN,Sat").weekdays) == "0,6");
    CHECK(bits(cron_of("0 0 * DEC *").months) == "12");
    CHECK(bits(cron_of("0 0 * * *").weekdays) == "0,1,2,3,4,5,6");
    CHECK(bits(cron_of("  0\t0 *  * *  ").hours) == "0");
    // A field starting with * is unrestricted, even with a step (crontab(5)).
    CHECK_FALSE(cron_of("0 0 */2 * mon").days_restricted);
    CHECK_FALSE(cron_of("0 0 1 * *").weekdays_restricted);
}

TEST_CASE("a fixed-time job has neither minute nor hour starting with *, as in cron(8)") {
    CHECK(cron_of("30 2 * * *").fixed_time());
    CHECK(cron_of("0-59 2 * * *").fixed_time());
    CHECK(cron_of("0,30 1-3 * * *").fixed_time());
    CHECK(cron_of("@daily").fixed_time());
    CHECK(cron_of("@weekly").fixed_time());
    CHECK_FALSE(cron_of("*/30 2 * * *").fixed_time());
    CHECK_FALSE(cron_of("30 * * * *").fixed_time());
    CHECK_FALSE(cron_of("* * * * *").fixed_time());
    CHECK_FALSE(cron_of("@hourly").fixed_time());
    CHECK(cron_of("30 2 * * *").minutes_restricted);
    CHECK_FALSE(cron_of("*/30 2 * * *").minutes_restricted);
    CHECK_FALSE(cron_of("30 */2 * * *").hours_restricted);
}

TEST_CASE("macros are the crontab(5) ones") {
    CHECK(cron_of("@hourly") == cron_of("0 * * * *"));
    CHECK(cron_of("@daily") == cron_of("0 0 * * *"));
    CHECK(cron_of("@midnight") == cron_of("0 0 * * *"));
    CHECK(cron_of("@weekly") == cron_of("0 0 * * 0"));
    CHECK(cron_of("@monthly") == cron_of("0 0 1 * *"));
    CHECK(cron_of("@yearly") == cron_of("0 0 1 1 *"));
    CHECK(cron_of("@annually") == cron_of("0 0 1 1 *"));
    CHECK(parse_schedule("@daily")->expression == "@daily");
}

TEST_CASE("every DURATION takes the duration forms, from 1s") {
    auto s = parse_schedule("every 1m30s");
    REQUIRE(s);
    CHECK(s->kind == Schedule::Kind::every);
    CHECK(s->every == 90s);
    CHECK(parse_schedule("every 1s")->every == 1s);
    CHECK(error_of("every 0s") == "\"every 0s\": the period must be at least 1s");
    CHECK(error_of("every 500ms") == "\"every 500ms\": the period must be at least 1s");
    CHECK(error_of("every") ==
          "\"every\": \"\" is not a duration (like \"30s\", \"5m\", \"1h30m\")");
    CHECK(error_of("every soon") ==
          "\"every soon\": \"soon\" is not a duration (like \"30s\", \"5m\", \"1h30m\")");
}

TEST_CASE("a wrong field is named, with the expression") {
    CHECK(error_of("61 * * * *") == "\"61 * * * *\": minute 61 is out of range 0-59");
    CHECK(error_of("0 24 * * *") == "\"0 24 * * *\": hour 24 is out of range 0-23");
    CHECK(error_of("0 0 0 * *") == "\"0 0 0 * *\": day-of-month 0 is out of range 1-31");
    CHECK(error_of("0 0 * 13 *") == "\"0 0 * 13 *\": month 13 is out of range 1-12 or jan-dec");
    CHECK(error_of("0 0 * * 8") == "\"0 0 * * 8\": day-of-week 8 is out of range 0-7 or sun-sat");
    CHECK(error_of("0 0 * * fry") ==
          "\"0 0 * * fry\": day-of-week \"fry\" is not a number or a name (0-7 or sun-sat)");
    CHECK(error_of("x * * * *") == "\"x * * * *\": minute \"x\" is not a number (0-59)");
    CHECK(error_of("*/0 * * * *") == "\"*/0 * * * *\": minute step 0 is out of range 1-60");
    CHECK(error_of("0 18-8 * * *") == "\"0 18-8 * * *\": hour range \"18-8\" goes backwards");
    CHECK(error_of("0 0 1,,2 * *") == "\"0 0 1,,2 * *\": day-of-month has an empty value");
    CHECK(error_of("0 0 * jan mon/x") ==
          "\"0 0 * jan mon/x\": day-of-week step \"x\" is not a number");
    CHECK(error_of("* * * *") ==
          "\"* * * *\": expected five fields (minute hour day-of-month month day-of-week), a "
          "macro such as @daily, or \"every DURATION\"; got 4 fields");
    CHECK(error_of("") ==
          "\"\": expected five fields (minute hour day-of-month month day-of-week), a macro "
          "such as @daily, or \"every DURATION\"; got 0 fields");
    CHECK(error_of("@often") ==
          "\"@often\": unknown macro; use @hourly, @daily (@midnight), @weekly, @monthly or "
          "@yearly (@annually)");
    CHECK(error_of("@reboot").find("@reboot is not a schedule here") != std::string::npos);
    CHECK(error_of("0 0 30 2 *") ==
          "\"0 0 30 2 *\": day-of-month \"30\" never comes in month \"2\"");
    // With both day fields restricted, either matches: this one runs on Mondays.
    CHECK(parse_schedule("0 0 30 2 mon"));
    CHECK(parse_schedule("0 0 29 feb *"));
}

#include "tests/unit/config/temp_tree.hpp"

TEST_CASE("schedule in a service file: a oneshot only, errors at the value") {
    using pkit::config::test::service_errors;
    using pkit::config::test::service_spec;
    using Errors = std::vector<std::string>;
    ServiceSpec spec =
        service_spec("command = [\"x\"]\ntype = \"oneshot\"\nschedule = \"@daily\"\n");
    CHECK(spec.schedule->kind == Schedule::Kind::cron);
    CHECK(spec.schedule->expression == "@daily");
    // Between episodes a job is neither running nor done: it counts toward readiness
    // only when the file says so.
    CHECK_FALSE(spec.affects_readiness);
    CHECK(service_spec("command = [\"x\"]\ntype = \"oneshot\"\nschedule = \"every 5m\"\n"
                       "affects_readiness = true\n")
              .affects_readiness);
    CHECK_FALSE(service_spec("command = [\"x\"]\n").schedule->enabled());
    CHECK_FALSE(service_spec("command = [\"x\"]\n").schedule.allocated());

    CHECK(service_errors("command = [\"x\"]\ntype = \"oneshot\"\nschedule = \"61 * * * *\"\n") ==
          Errors{"services/web.toml:3:12: error: schedule: \"61 * * * *\": minute 61 is out of "
                 "range 0-59"});
    CHECK(service_errors("command = [\"x\"]\ntype = \"oneshot\"\nschedule = \"every 0s\"\n") ==
          Errors{"services/web.toml:3:12: error: schedule: \"every 0s\": the period must be at "
                 "least 1s"});
    CHECK(service_errors("command = [\"x\"]\nschedule = \"@hourly\"\n") ==
          Errors{"services/web.toml:2:1: error: schedule: only a job can be scheduled; add "
                 "type = \"oneshot\""});
    CHECK(service_errors("command = [\"x\"]\ntype = \"oneshot\"\nschedule = 5\n") ==
          Errors{"services/web.toml:3:12: error: schedule: expected a string, got an integer"});
}
