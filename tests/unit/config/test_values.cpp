// Value forms of SPEC §2: durations, signals, sizes and their display forms.

#include "tests/unit/config/config_doctest.hpp"

#include <cmath>
#include <csignal>

#include "config/values.hpp"

using namespace pkit::config;
using namespace std::chrono_literals;

TEST_CASE("durations parse from number+unit strings") {
    CHECK(parse_duration("250ms") == Duration(250ms));
    CHECK(parse_duration("5s") == Duration(5s));
    CHECK(parse_duration("1m30s") == Duration(90s));
    CHECK(parse_duration("2h") == Duration(2h));
    CHECK(parse_duration("0") == Duration(0s));
    CHECK(parse_duration("0s") == Duration(0s));
    CHECK(parse_duration("0.5s") == Duration(500ms));
    CHECK(parse_duration("1.25m") == Duration(75s));
    CHECK(parse_duration("1h2m3s4ms") == Duration(1h + 2min + 3s + 4ms));
    CHECK(parse_duration("90s") == Duration(90s));
    CHECK(parse_duration("1m5ms") == Duration(1min + 5ms));
    CHECK(parse_duration("0.000000001s") == Duration(1ns));
}

TEST_CASE("malformed, negative and overflowing durations are refused") {
    for (const char* bad : {"",      "5",    "-5s",   "s",           "5x",
                            "5 s",   " 5s",  "5s ",   "1.s",         ".5s",
                            "30s1m", "1s1s", "5ms3s", "1d",          "5S",
                            "1e3s",  "+5s",  "0x10s", "9999999999h", "99999999999999999999s"}) {
        CAPTURE(bad);
        CHECK_FALSE(parse_duration(bad).has_value());
    }
}

TEST_CASE("durations from a number of seconds") {
    CHECK(duration_from_seconds(0) == Duration(0s));
    CHECK(duration_from_seconds(0.25) == Duration(250ms));
    CHECK(duration_from_seconds(30) == Duration(30s));
    CHECK_FALSE(duration_from_seconds(-1).has_value());
    CHECK_FALSE(duration_from_seconds(1e300).has_value());
    CHECK_FALSE(duration_from_seconds(std::nan("")).has_value());
    CHECK_FALSE(duration_from_seconds(HUGE_VAL).has_value());
}

TEST_CASE("signals parse with or without SIG, or as a number") {
    CHECK(parse_signal("SIGTERM") == SIGTERM);
    CHECK(parse_signal("TERM") == SIGTERM);
    CHECK(parse_signal("HUP") == SIGHUP);
    CHECK(parse_signal("SIGKILL") == SIGKILL);
    CHECK(parse_signal("USR1") == SIGUSR1);
    CHECK(parse_signal("IOT") == SIGABRT);
    CHECK(parse_signal("15") == 15);
    CHECK(parse_signal("1") == 1);
    CHECK(parse_signal("64") == 64);
    CHECK(parse_signal("40") == 40);
    CHECK(parse_signal("SIG40") == 40);
    CHECK(parse_signal("RTMIN") == SIGRTMIN);
    CHECK(parse_signal("SIGRTMIN+2") == SIGRTMIN + 2);
    CHECK(parse_signal("RTMAX-1") == SIGRTMAX - 1);
    for (const char* bad : {"", "0", "65", "-9", "term", "SIGterm", "SIG", "SIGFOO", "RTMIN-1",
                            "RTMAX+1", "9x", "SIG 9"}) {
        CAPTURE(bad);
        CHECK_FALSE(parse_signal(bad).has_value());
    }
}

TEST_CASE("an unknown signal gets the nearest name, or its upper case") {
    CHECK(signal_suggestion("KILLL") == "; did you mean \"KILL\"?");
    CHECK(signal_suggestion("SIGTREM") == "; did you mean \"SIGTERM\"?");
    CHECK(signal_suggestion("USR3") == "; did you mean \"USR1\"?");
    CHECK(signal_suggestion("term") == "; signal names are upper case: \"TERM\"");
    CHECK(signal_suggestion("sighup") == "; signal names are upper case: \"SIGHUP\"");
    CHECK(signal_suggestion("RELOAD").empty());
    CHECK(signal_suggestion("").empty());
}

TEST_CASE("signal names are canonical, SIG<n> without a name, and round-trip") {
    CHECK(signal_name(SIGKILL) == "SIGKILL");
    CHECK(signal_name(SIGABRT) == "SIGABRT");
    CHECK(signal_name(SIGCHLD) == "SIGCHLD");
    CHECK(signal_name(40) == "SIG40");
    for (int signo = 1; signo <= 64; ++signo) {
        CAPTURE(signo);
        CHECK(parse_signal(signal_name(signo)) == signo);
    }
}

TEST_CASE("sizes take bytes or binary suffixes only") {
    CHECK(parse_size("0") == 0u);
    CHECK(parse_size("512") == 512u);
    CHECK(parse_size("512B") == 512u);
    CHECK(parse_size("256KiB") == 256u * 1024);
    CHECK(parse_size("1MiB") == 1024u * 1024);
    CHECK(parse_size("2GiB") == 2ull << 30);
    CHECK(parse_size("1TiB") == 1ull << 40);
    for (const char* bad : {"", "KiB", "1KB", "1MB", "1k", "1K", "1.5MiB", "-1", "1 KiB", "1kib",
                            "99999999999999999999", "20000000TiB"}) {
        CAPTURE(bad);
        CHECK_FALSE(parse_size(bad).has_value());
    }
}

TEST_CASE("sizes format in the largest unit that holds them whole, and read back") {
    CHECK(format_size(0) == "0B");
    CHECK(format_size(100) == "100B");
    CHECK(format_size(1024) == "1KiB");
    CHECK(format_size(1536ULL << 10) == "1536KiB");
    CHECK(format_size(256ULL << 20) == "256MiB");
    CHECK(format_size(1ULL << 30) == "1GiB");
    CHECK(format_size(3ULL << 40) == "3TiB");
    for (std::uint64_t bytes : {0ULL, 1ULL, 1023ULL, 4097ULL << 10, 5ULL << 30, ~0ULL}) {
        CAPTURE(bytes);
        CHECK(parse_size(format_size(bytes)) == bytes);
    }
}

TEST_CASE("durations format as two units, truncated") {
    CHECK(format_duration(0s) == "0s");
    CHECK(format_duration(850ms) == "850ms");
    CHECK(format_duration(999999us) == "999ms");
    CHECK(format_duration(12s) == "12s");
    CHECK(format_duration(12s + 900ms) == "12s");
    CHECK(format_duration(3min + 12s) == "3m12s");
    CHECK(format_duration(3min) == "3m");
    CHECK(format_duration(2h + 5min + 30s) == "2h5m");
    CHECK(format_duration(2h) == "2h");
    CHECK(format_duration(24h * 3 + 4h + 59min) == "3d4h");
    CHECK(format_duration(-1500ms) == "-1s");
    // The extremes: what a saturated conversion of a huge or NaN number of seconds gives.
    CHECK(format_duration(Duration::max()) == "106751d23h");
    CHECK(format_duration(Duration::min()) == "-106751d23h");  // once: endless recursion
}

TEST_CASE("to_seconds gives fractional seconds") {
    CHECK(to_seconds(1500ms) == doctest::Approx(1.5));
    CHECK(to_seconds(0s) == 0.0);
}
