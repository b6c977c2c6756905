// Bad values in the sections of a service file: one exact diagnostic each.

#include "tests/unit/config/config_doctest.hpp"

#include "tests/unit/config/temp_tree.hpp"

using namespace pkit::config::test;
using Errors = std::vector<std::string>;

namespace {

void check_all(std::initializer_list<BadCase> cases) {
    for (const BadCase& c : cases) {
        check_bad(c);
    }
}

}  // namespace

TEST_CASE("bad [restart] values") {
    check_all({
        {"[restart]\nmax_restarts = -2",
         "3:16: error: restart.max_restarts: must be at least -1, got -2"},
        {"[restart]\nmax_restarts = 1.0",
         "3:16: error: restart.max_restarts: expected an integer, got a float"},
        {"[restart]\nbackoff_factor = 0.5",
         "3:18: error: restart.backoff_factor: must be a finite number of at least 1, got 0.5"},
        {"[restart]\nbackoff_factor = inf",
         "3:18: error: restart.backoff_factor: must be a finite number of at least 1, got inf"},
        {"[restart]\nbackoff_factor = \"2\"",
         "3:18: error: restart.backoff_factor: expected a number, got a string"},
        {"[restart]\nmax_backoff = \"100ms\"",
         "3:15: error: restart.max_backoff (100ms) must not be less than "
         "restart.backoff_initial (200ms)"},
        {"[restart]\nbackoff_initial = \"1m\"",
         "3:19: error: restart.max_backoff (30s) must not be less than "
         "restart.backoff_initial (1m)"},
        {"[restart]\npolicy = \"on-crash\"",
         "3:10: error: restart.policy: unknown value \"on-crash\"; did you mean \"on_crash\"?"},
        {"[restart]\npolicy = 1", "3:10: error: restart.policy: expected a string, got an integer"},
        {"[restart]\njitter = \"no\"",
         "3:10: error: restart.jitter: expected true or false, got a string"},
        {"[restart]\nwithin = \"1x\"",
         "3:10: error: restart.within: \"1x\" is not a duration (use seconds as a number, or a "
         "string like \"250ms\", \"5s\", \"1m30s\", \"2h\")"},
        {"[restart]\nmax_backof = \"1s\"",
         "3:1: error: unknown key \"max_backof\" in [restart]; did you mean \"max_backoff\"?"},
    });
}

TEST_CASE("bad [storm] values") {
    check_all({
        {"[storm]\nthreshold = -1",
         "3:13: error: storm.threshold: must be a finite number above 0, got -1"},
        {"[storm]\nthreshold = 0",
         "3:13: error: storm.threshold: must be a finite number above 0, got 0"},
        {"[storm]\npause = 0", "3:9: error: storm.pause: must be more than 0"},
        {"[storm]\ndecay = \"0s\"", "3:9: error: storm.decay: must be more than 0"},
    });
}

TEST_CASE("bad [stop_when] and [give_up_when] values") {
    check_all({
        {"[stop_when]\nexit_codes = [1, 300]",
         "3:18: error: stop_when.exit_codes: must be between 0 and 255, got 300"},
        {"[stop_when]\nexit_codes = 1",
         "3:14: error: stop_when.exit_codes: expected an array, got an integer"},
        {"[stop_when]\nsignals = [\"SIGFOO\"]",
         "3:12: error: stop_when.signals: unknown signal \"SIGFOO\""},
        {"[stop_when]\nsignals = [\"term\"]",
         "3:12: error: stop_when.signals: unknown signal \"term\"; signal names are upper case: "
         "\"TERM\""},
        {"[stop_when]\nsignals = [99]",
         "3:12: error: stop_when.signals: signal numbers go from 1 to 64, got 99"},
        {"[stop_when]\nsignals = [true]",
         "3:12: error: stop_when.signals: expected a signal name or number, got a boolean"},
        {"[stop_when]\noutput_matches = \"(unclosed\"",
         "3:18: error: stop_when.output_matches: invalid regular expression: missing ): "
         "(unclosed"},
        {"[give_up_when]\noutput_matches = \"a{2,1}\"",
         "3:18: error: give_up_when.output_matches: invalid regular expression: invalid "
         "repetition size: {2,1}"},
        {"[stop_when]\nlaunch_errors = [\"any\"]",
         "3:1: error: unknown key \"launch_errors\" in [stop_when]"},
        {"[give_up_when]\nlaunch_errors = [\"not_fund\"]",
         "3:18: error: give_up_when.launch_errors: unknown value \"not_fund\"; did you mean "
         "\"not_found\"?"},
        {"[give_up_when]\nlaunch_errors = [\"segfault\"]",
         "3:18: error: give_up_when.launch_errors: unknown value \"segfault\" (expected "
         "\"not_found\", \"permission_denied\", \"bad_cwd\", \"bad_user\", \"bad_env_file\", "
         "\"exec_format\", \"resources\", \"other\", \"undefined_variable\", \"sandbox\" or "
         "\"any\")"},
    });
}

TEST_CASE("bad [health] values") {
    check_all({
        {"[health]\nexec = [\"x\"]\ntcp = \"h:1\"\ninterval = 1",
         "4:1: error: [health] takes one probe, and \"exec\" is already set"},
        {"[health]\nexec = [\"check\"]",
         "2:1: error: missing key \"interval\" in [health] (required with \"exec\")"},
        {"[health]\nexec = []\ninterval = 1",
         "3:8: error: health.exec: must not be empty (the program comes first)"},
        {"[health]\ntcp = \"localhost\"\ninterval = 1",
         "3:7: error: health.tcp: \"localhost\" is not \"host:port\" (e.g. \"127.0.0.1:8080\")"},
        {"[health]\nhttp = \"https://x/\"\ninterval = 1",
         "3:8: error: health.http: https is not supported (the probe speaks plain HTTP); use an "
         "http:// URL"},
        {"[health]\nfile = \"\"\ninterval = 1", "3:8: error: health.file: must not be empty"},
        {"[health]\nwatchdog = \"10s\"",
         "3:12: error: health.watchdog: needs [ready] notify = true (the watchdog is fed over "
         "sd_notify)"},
        {"[health]\nwatchdog = \"10s\"\ninterval = 5\n[ready]\nnotify = true",
         "4:1: error: health.interval: has no effect with \"watchdog\", whose duration is the "
         "period"},
        {"[health]\ninterval = 5",
         "3:1: error: health.interval: has no effect without a probe (exec, tcp, http, file or "
         "watchdog)"},
        {"[health]\nfile = \"/x\"\ninterval = 1\nfailures = 0",
         "5:12: error: health.failures: must be at least 1, got 0"},
        {"[health]\nfile = \"/x\"\ninterval = 0",
         "4:12: error: health.interval: must be more than 0"},
        {"[health]\nfile = \"/x\"\ninterval = 1\ntimeout = \"0s\"",
         "5:11: error: health.timeout: must be more than 0"},
    });
}

TEST_CASE("bad [ready] values") {
    check_all({
        {"[ready]\nnotify = true\nexec = [\"x\"]",
         "4:1: error: [ready] takes notify = true or one probe, not both: \"exec\" is set along "
         "with notify"},
        {"[ready]\ntcp = \"h:1\"\nfile = \"/x\"",
         "4:1: error: [ready] takes one probe, and \"tcp\" is already set"},
        {"[ready]\ninterval = \"1s\"",
         "3:1: error: ready.interval: has no effect without a probe (exec, tcp, http or file)"},
        {"[ready]\ntimeout = \"1s\"",
         "3:1: error: ready.timeout: has no effect without notify = true or a probe"},
        {"[ready]\nnotify = true\ntimeout = 0", "4:11: error: ready.timeout: must be more than 0"},
        {"[ready]\nwatchdog = 5", "3:1: error: unknown key \"watchdog\" in [ready]"},
        {"[ready]\nnotify = \"yes\"",
         "3:10: error: ready.notify: expected true or false, got a string"},
    });
}

TEST_CASE("bad [stop] and [output] values") {
    check_all({
        {"[stop]\nsignal = \"TERN\"", "3:10: error: stop.signal: unknown signal \"TERN\""},
        {"[stop]\nsignal = 0", "3:10: error: stop.signal: signal numbers go from 1 to 64, got 0"},
        {"[stop]\nmode = \"all\"",
         "3:8: error: stop.mode: unknown value \"all\" (expected \"group\" or \"process\")"},
        {"[stop]\ntimeout = \"x\"",
         "3:11: error: stop.timeout: \"x\" is not a duration (use seconds as a number, or a "
         "string like \"250ms\", \"5s\", \"1m30s\", \"2h\")"},
        {"[output]\nmax_lines = 0", "3:13: error: output.max_lines: must be at least 1, got 0"},
        {"[output]\nmax_bytes = \"1KB\"",
         "3:13: error: output.max_bytes: \"1KB\" is not a size (use bytes as an integer, or a "
         "string like \"512B\", \"256KiB\", \"1MiB\", \"2GiB\")"},
        {"[output]\nmax_bytes = 0", "3:13: error: output.max_bytes: must be at least 1 byte"},
        {"[output]\nmax_bytes = -5", "3:13: error: output.max_bytes: must not be negative"},
        {"[output]\nforward = \"json\"",
         "3:11: error: output.forward: unknown value \"json\" (expected \"prefix\", \"raw\" or "
         "\"none\")"},
    });
}
