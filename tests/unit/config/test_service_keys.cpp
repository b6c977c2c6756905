// Every key of a service file: good values land in the spec, bad ones give one
// exact, positioned diagnostic.

#include <sys/resource.h>
#include "tests/unit/config/config_doctest.hpp"

#include "tests/unit/config/temp_tree.hpp"

using namespace pkit::config;
using namespace pkit::config::test;
using namespace std::chrono_literals;
using Errors = std::vector<std::string>;

TEST_CASE("top-level keys read into the spec") {
    ServiceSpec spec = service_spec(R"(
command = ["/usr/bin/api", "--port", "8080", ""]
cwd = "/srv"
env = { LOG_LEVEL = "info", EMPTY = "" }
clear_env = true
env_file = "/etc/a.env"
umask = "027"
success_codes = [0, 3]
timeout = 1.5
autostart = false
escalate = true
user = )" + std::to_string(::getuid()) +
                                    R"(
[rlimits]
nofile = 1024
core = "unlimited"
)");
    CHECK(spec.command == std::vector<std::string>{"/usr/bin/api", "--port", "8080", ""});
    CHECK(spec.process->cwd == "/srv");
    CHECK(spec.process->env ==
          std::map<std::string, std::string>{{"EMPTY", ""}, {"LOG_LEVEL", "info"}});
    CHECK(spec.process->clear_env);
    CHECK(spec.process->env_files == std::vector<std::string>{"/etc/a.env"});
    CHECK(spec.process->umask == 027u);
    CHECK(spec.success_codes == ExitCodes{0, 3});
    CHECK(spec.success_codes.contains(3));
    CHECK_FALSE(spec.success_codes.contains(1));
    // A code outside 0-255 is none: ignored, never thrown (the loader reports it).
    CHECK(ExitCodes{0, 256, -1} == ExitCodes{0});
    CHECK_FALSE(ExitCodes{256}.contains(256));
    CHECK_FALSE(spec.success_codes.contains(-1));
    CHECK_FALSE(spec.success_codes.contains(256));
    // A set: the list's order and repeats are no change for reload.
    CHECK(service_spec("command = [\"x\"]\nsuccess_codes = [3, 0, 3]\n").success_codes ==
          spec.success_codes);
    CHECK(spec.timeout == 1500ms);
    CHECK_FALSE(spec.autostart);
    CHECK(spec.escalate);
    CHECK(spec.process->user.id == ::getuid());
    REQUIRE(spec.process->rlimits.size() == 2);
    CHECK(spec.process->rlimits[0] == Rlimit{RLIMIT_CORE, "core", std::nullopt});
    CHECK(spec.process->rlimits[1] == Rlimit{RLIMIT_NOFILE, "nofile", 1024});
    CHECK(service_spec("command = [\"x\"]\nenv_file = [\"a\", \"b\"]\n").process->env_files ==
          std::vector<std::string>{"a", "b"});
}

TEST_CASE("section keys read into the spec") {
    ServiceSpec spec = service_spec(R"(command = ["x"]
[restart]
policy = "always"
max_restarts = 5
within = "1m"
backoff_initial = "1s"
backoff_factor = 1.5
max_backoff = 60
jitter = false
reset_after = "2m"
[storm]
pause = "30s"
threshold = 3
decay = "10s"
[stop_when]
exit_codes = [0]
signals = ["TERM", 9, "SIGRTMIN+1"]
output_matches = "fatal: .*"
[give_up_when]
exit_codes = [78]
launch_errors = ["not_found", "exec_format", "any"]
[health]
http = "http://127.0.0.1:8080/healthz"
interval = "5s"
failures = 2
timeout = "2s"
[ready]
tcp = "127.0.0.1:8080"
timeout = "10s"
[stop]
signal = "SIGINT"
timeout = "10s"
mode = "process"
[output]
max_lines = 10
max_bytes = "1MiB"
forward = "raw"
)");
    CHECK(spec.restart == RestartSpec{.policy = RestartPolicy::always,
                                      .max_restarts = 5,
                                      .within = 1min,
                                      .backoff_initial = 1s,
                                      .backoff_factor = 1.5,
                                      .max_backoff = 60s,
                                      .jitter = false,
                                      .reset_after = 2min});
    CHECK(*spec.storm == StormSpec{.pause = 30s, .threshold = 3.0, .decay = 10s});
    CHECK(*spec.stop_when == Predicate{.exit_codes = {0},
                                       .signals = {SIGTERM, SIGKILL, SIGRTMIN + 1},
                                       .output_matches = Pattern::compile("fatal: .*").value()});
    CHECK(*spec.give_up_when ==
          Predicate{.exit_codes = {78},
                    .launch_errors = {LaunchError::not_found, LaunchError::exec_format},
                    .any_launch_error = true});
    CHECK(*spec.health == ProbeSpec{.kind = ProbeKind::http,
                                    .target = "http://127.0.0.1:8080/healthz",
                                    .interval = 5s,
                                    .failures = 2,
                                    .timeout = 2s});
    CHECK(*spec.ready == ReadySpec{.probe = ProbeSpec{.kind = ProbeKind::tcp,
                                                      .target = "127.0.0.1:8080",
                                                      .interval = 200ms},
                                   .timeout = 10s});
    CHECK(spec.ready->probe.timeout == 1s);
    CHECK(spec.stop == StopSpec{.signal = SIGINT, .timeout = 10s, .mode = StopMode::process});
    CHECK(spec.output ==
          OutputSpec{.max_lines = 10, .max_bytes = 1 << 20, .forward = Forward::raw});
}

TEST_CASE("probe kinds and readiness forms") {
    ServiceSpec exec = service_spec(
        "command = [\"x\"]\n[health]\nexec = [\"check\", \"-q\"]\ninterval = 0.5\n"
        "[ready]\nfile = \"/run/ready\"\ninterval = \"1s\"\n");
    CHECK(exec.health->kind == ProbeKind::exec);
    CHECK(exec.health->argv == std::vector<std::string>{"check", "-q"});
    CHECK(exec.health->interval == 500ms);
    CHECK(exec.ready->probe.kind == ProbeKind::file);
    CHECK(exec.ready->probe.target == "/run/ready");
    CHECK(exec.ready->probe.interval == 1s);

    ServiceSpec watchdog =
        service_spec("command = [\"x\"]\n[health]\nwatchdog = \"10s\"\n[ready]\nnotify = true\n");
    CHECK(watchdog.health->kind == ProbeKind::watchdog);
    CHECK(watchdog.health->watchdog == 10s);
    CHECK(watchdog.ready->notify);
    CHECK_FALSE(watchdog.ready->probe.enabled());
    CHECK(watchdog.ready->probe.interval == 0s);
}

TEST_CASE("bad values of top-level keys") {
    const BadCase cases[] = {
        {"cwd = \"\"", "2:7: error: cwd: must not be empty"},
        {"cwd = 5", "2:7: error: cwd: expected a string, got an integer"},
        {"env = { A = 1 }", "2:13: error: env.A: expected a string, got an integer"},
        {"env = { \"A=B\" = \"x\" }", "2:9: error: env: \"A=B\" is not a valid variable name"},
        {"env = \"x\"", "2:7: error: env: expected a table, got a string"},
        {"clear_env = \"yes\"", "2:13: error: clear_env: expected true or false, got a string"},
        {"env_file = 5",
         "2:12: error: env_file: expected a string or an array of strings, got an integer"},
        {"env_file = [\"a\", 1]", "2:18: error: env_file: expected a string, got an integer"},
        {"umask = 23",
         "2:9: error: umask: expected a string of octal digits like \"027\", got an integer"},
        {"umask = \"0800\"",
         "2:9: error: umask: \"0800\" is not an octal mode from \"000\" to \"777\""},
        {"umask = \"1777\"",
         "2:9: error: umask: \"1777\" is not an octal mode from \"000\" to \"777\""},
        {"[rlimits]\nnofiles = 5",
         "3:1: error: unknown key \"nofiles\" in [rlimits]; did you mean \"nofile\"?"},
        {"[rlimits]\nnofile = -1", "3:10: error: rlimits.nofile: must be at least 0, got -1"},
        {"[rlimits]\ncore = \"lots\"",
         "3:8: error: rlimits.core: expected an integer or \"unlimited\", got \"lots\""},
        {"user = true", "2:8: error: user: expected a name or a numeric id, got a boolean"},
        {"user = -1", "2:8: error: user: must be between 0 and 4294967294, got -1"},
        {"group = \"\"", "2:9: error: group: must not be empty"},
        {"after = \"db\"", "2:9: error: after: expected an array, got a string"},
        {"after = [1]", "2:10: error: after: expected a string, got an integer"},
        {"success_codes = [0, 256]",
         "2:21: error: success_codes: must be between 0 and 255, got 256"},
        {"success_codes = [0.5]", "2:18: error: success_codes: expected an integer, got a float"},
        {"timeout = \"5\"",
         "2:11: error: timeout: \"5\" is not a duration (use seconds as a number, or a string "
         "like \"250ms\", \"5s\", \"1m30s\", \"2h\")"},
        {"timeout = \"-5s\"",
         "2:11: error: timeout: \"-5s\" must not be negative (use seconds as a number, or a "
         "string like \"250ms\", \"5s\", \"1m30s\", \"2h\")"},
        {"timeout = true",
         "2:11: error: timeout: expected a duration (seconds as a number, or a string like "
         "\"5s\"), got a boolean"},
        {"timeout = 1e300", "2:11: error: timeout: 1e+300 seconds is out of range"},
        {"autostart = 1", "2:13: error: autostart: expected true or false, got an integer"},
        {"escalate = \"no\"", "2:12: error: escalate: expected true or false, got a string"},
        {"autostrat = true", "2:1: error: unknown key \"autostrat\"; did you mean \"autostart\"?"},
        {"frobnicate = true", "2:1: error: unknown key \"frobnicate\""},
        {"restart = 5", "2:11: error: restart: expected a table, got an integer"},
        {"[helth]\nexec = [\"x\"]", "2:1: error: unknown table [helth]; did you mean [health]?"},
        {"[restart.extra]\na = 1", "2:1: error: unknown table [restart.extra]"},
        {"stop = { sginal = \"HUP\" }",
         "2:10: error: unknown key \"sginal\" in [stop]; did you mean \"signal\"?"},
    };
    for (const BadCase& c : cases) {
        check_bad(c);
    }
}

TEST_CASE("command must be a non-empty array of strings with a program") {
    CHECK(service_errors("command = []\n") ==
          Errors{"services/web.toml:1:11: error: command: must not be empty (the program comes "
                 "first)"});
    CHECK(service_errors("command = [\"\", \"x\"]\n") ==
          Errors{"services/web.toml:1:12: error: command: the program (the first element) must "
                 "not be empty"});
    CHECK(service_errors("command = [\"x\", 5]\n") ==
          Errors{"services/web.toml:1:17: error: command: expected a string, got an integer"});
    CHECK(service_errors("[command]\nx = 1\n") ==
          Errors{"services/web.toml:1:1: error: command: expected an array of strings, got a "
                 "table"});
}
