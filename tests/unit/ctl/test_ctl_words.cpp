// pkitctl's small decisions: the colour decision of --color, the did-you-mean of an
// unknown command, --since durations and short second counts.

#include <doctest/doctest.h>

#include "ctl/color.hpp"
#include "ctl/command_suggest.hpp"
#include "ctl/global_options.hpp"
#include "ctl/time_text.hpp"

using namespace pkit::ctl;

TEST_CASE("color: auto wants a terminal, no NO_COLOR and TERM not dumb") {
    CHECK(color_wanted(ColorMode::automatic, true, nullptr, "xterm"));
    CHECK(color_wanted(ColorMode::automatic, true, nullptr, nullptr));
    CHECK(color_wanted(ColorMode::automatic, true, "", "xterm"));  // empty NO_COLOR is unset
    CHECK_FALSE(color_wanted(ColorMode::automatic, false, nullptr, "xterm"));
    CHECK_FALSE(color_wanted(ColorMode::automatic, true, "1", "xterm"));
    CHECK_FALSE(color_wanted(ColorMode::automatic, true, nullptr, "dumb"));
    CHECK(color_wanted(ColorMode::always, false, "1", "dumb"));
    CHECK_FALSE(color_wanted(ColorMode::never, true, nullptr, "xterm"));
    CHECK(parse_color_mode("auto") == ColorMode::automatic);
    CHECK(parse_color_mode("always") == ColorMode::always);
    CHECK(parse_color_mode("never") == ColorMode::never);
    CHECK_FALSE(parse_color_mode("yes").has_value());
}

TEST_CASE("unknown command: the closest command is suggested when it is a likely typo") {
    // "start" before "status": one edit from "stat", but "stat" begins "status".
    const std::vector<std::string> commands{"start", "status", "stop", "restart",
                                            "logs",  "events", "show", "explain"};
    CHECK(unknown_command_message("stat", commands) ==
          "unknown command \"stat\"; did you mean \"status\"?");
    CHECK(unknown_command_message("explian", commands) ==
          "unknown command \"explian\"; did you mean \"explain\"?");
    CHECK(unknown_command_message("sto", commands) ==
          "unknown command \"sto\"; did you mean \"stop\"?");
    CHECK(unknown_command_message("lgos", commands) ==
          "unknown command \"lgos\"; did you mean \"logs\"?");
    CHECK(unknown_command_message("frobnicate", commands) ==
          "unknown command \"frobnicate\"; `pkitctl --help` lists the commands");
    const std::vector<std::string> valued{"--socket", "--timeout", "--color"};
    CHECK(check_command({"--socket", "/x.sock", "stat"}, commands, valued) ==
          "unknown command \"stat\"; did you mean \"status\"?");
    CHECK(check_command({"--socket=/x", "--json", "status"}, commands, valued) == std::nullopt);
    // An option's value is not taken for the command.
    CHECK(check_command({"--color", "never", "logs", "web"}, commands, valued) == std::nullopt);
    CHECK(check_command({"--help"}, commands, valued) == std::nullopt);
    CHECK(check_command({}, commands, valued) == std::nullopt);
}

TEST_CASE("command word: only the command given is declared, unless --help or --version") {
    const std::vector<std::string> valued{"--socket", "--timeout", "--color"};
    CHECK(command_word({"--socket", "/x.sock", "--json", "status", "web"}, valued) == "status");
    CHECK(command_word({"--color=never", "logs", "-n", "5", "web"}, valued) == "logs");
    CHECK(command_word({"--timeout", "3"}, valued) == std::nullopt);
    CHECK(command_word({"--", "status"}, valued) == std::nullopt);
    // CLI11 is told every command for the app's help and its version line...
    CHECK(needs_every_command({"--help"}));
    CHECK(needs_every_command({"status", "-h"}));
    CHECK(needs_every_command({"logs", "-fh", "web"}));
    CHECK(needs_every_command({"--version"}));
    CHECK(needs_every_command({"status", "--help-all"}));
    // ...and only the command given otherwise, whatever its options and names.
    CHECK_FALSE(needs_every_command({"--socket", "/x", "status", "--tree", "web"}));
    CHECK_FALSE(needs_every_command({"logs", "-f", "-n", "5", "--previous", "web"}));
    CHECK_FALSE(needs_every_command({"status", "--", "-h"}));
    CHECK_FALSE(needs_every_command({}));
}

TEST_CASE("a command-line duration: pkit.toml's durations and bare seconds, one parser") {
    CHECK(parse_duration_arg("2s") == 2.0);
    CHECK(parse_duration_arg("5s") == 5.0);
    CHECK(parse_duration_arg("1m30s") == 90.0);
    CHECK(parse_duration_arg("500ms") == 0.5);
    CHECK(parse_duration_arg("2") == 2.0);
    CHECK(parse_duration_arg("5") == 5.0);
    CHECK(parse_duration_arg("0.25") == 0.25);
    CHECK(parse_duration_arg("0") == 0.0);
    CHECK_FALSE(parse_duration_arg("").has_value());
    CHECK_FALSE(parse_duration_arg("-1").has_value());
    CHECK_FALSE(parse_duration_arg("2 s").has_value());
    CHECK_FALSE(parse_duration_arg("soon").has_value());
    CHECK_FALSE(parse_duration_arg("inf").has_value());
    CHECK_FALSE(parse_duration_arg("1e300").has_value());
}

TEST_CASE("a bad duration option says what a duration looks like, in one short line") {
    CHECK(duration_option("--within", "5") == 5.0);
    CHECK(duration_option("--timeout", "1m30s", true) == 90.0);
    try {
        (void)duration_option("--timeout", "abc", true);
        FAIL("accepted");
    } catch (const CtlError& error) {
        CHECK(error.status() == k_exit_usage);
        CHECK(std::string(error.what()) ==
              "--timeout: \"abc\" is not a duration (such as 5, 30s, 1m30s, 250ms)");
    }
    CHECK_THROWS_AS((void)duration_option("--timeout", "0", true), CtlError);
    CHECK(duration_option("--since", "0") == 0.0);
}

TEST_CASE("seconds words: two decimals under a second, one under a minute, then units") {
    CHECK(seconds_words(0.4) == "0.40s");
    CHECK(seconds_words(3.0) == "3.0s");
    CHECK(seconds_words(59.94) == "59.9s");
    CHECK(seconds_words(90) == "1m30s");
    CHECK(seconds_words(-1) == "0.00s");
}
