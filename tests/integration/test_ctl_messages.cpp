// pkitctl's messages for people (SPEC §10): an unknown command gets a suggestion (exit
// 2), EACCES on the socket says who may connect (exit 4), option help names value
// types in words, and --color auto|always|never (auto: a terminal, no NO_COLOR, TERM
// not dumb), checked on a pseudo-terminal from util-linux `script`.

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// Runs `env ENV... PKITCTL_BIN --socket SOCKET ARGS...` on a pseudo-terminal.
CommandResult on_terminal(const Daemon& pkitd, const std::string& env_args,
                          const std::string& args) {
    const std::string command = "env " + env_args + " '" + std::string(PKITCTL_BIN) +
                                "' --socket '" + pkitd.socket() + "' " + args;
    return run_command({"/usr/bin/env", "script", "-qfec", command, "/dev/null"}, 20s);
}

bool coloured(const CommandResult& result) {
    return result.out.find("\x1b[") != std::string::npos;
}

}  // namespace

TEST_CASE("ctl messages: an unknown command suggests the closest one and exits 2") {
    auto stat = run_ctl({"stat"});
    CHECK(stat.exit_code == 2);
    CHECK(stat.err == "pkitctl: unknown command \"stat\"; did you mean \"status\"?\n");
    auto after_options = run_ctl({"--socket", "/nonexistent.sock", "--json", "lgos", "web"});
    CHECK(after_options.exit_code == 2);
    CHECK(after_options.err == "pkitctl: unknown command \"lgos\"; did you mean \"logs\"?\n");
    auto far = run_ctl({"frobnicate"});
    CHECK(far.exit_code == 2);
    CHECK(far.err ==
          "pkitctl: unknown command \"frobnicate\"; `pkitctl --help` lists the commands\n");
}

TEST_CASE("ctl messages: option help names value types in words") {
    auto help = run_ctl({"--help"});
    INFO(help.out);
    CHECK(help.exit_code == 0);
    for (const auto* words : {"--socket PATH", "--timeout DURATION", "--color WHEN", "show"}) {
        CHECK_MESSAGE(help.out.find(words) != std::string::npos, words);
    }
    CHECK(help.out.find("FLOAT") == std::string::npos);
    CHECK(help.out.find("TEXT") == std::string::npos);
    auto logs = run_ctl({"logs", "--help"});
    INFO(logs.out);
    for (const auto* words :
         {"--lines LINES", "--since DURATION", "--stream STREAM", "-t,--timestamps"}) {
        CHECK_MESSAGE(logs.out.find(words) != std::string::npos, words);
    }
    CHECK(logs.out.find("INT") == std::string::npos);
    auto events = run_ctl({"events", "--help"});
    CHECK(events.out.find("--service NAME") != std::string::npos);
    CHECK(events.out.find("--type TYPE") != std::string::npos);
}

TEST_CASE("ctl messages: EACCES on the socket says who may connect and exits 4") {
    if (!is_root() || !have_program("setpriv")) {
        PKIT_SKIP("needs root and setpriv to connect as uid 65534");
    }
    TempDir dir;
    dir.service("web", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);  // no control_users or control_group: the socket is 0600
    pkitd.wait_ready();
    auto result = run_command({"/usr/bin/env", "setpriv", "--reuid=65534", "--regid=65534",
                               "--clear-groups", PKITCTL_BIN, "--socket", pkitd.socket(), "status"},
                              20s);
    CHECK(result.exit_code == 4);
    CHECK(result.err ==
          "pkitctl: cannot connect to " + pkitd.socket() +
              " (--socket): Permission denied — only root, the user pkitd runs as, the users "
              "in control_users and the members of control_group (pkitd.toml) may "
              "use the control socket; see pkitd(8)\n");
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("ctl messages: --color always, never and auto with TERM=dumb on a terminal") {
    if (!have_program("script")) {
        PKIT_SKIP("util-linux script is missing: no pseudo-terminal");
    }
    TempDir dir;
    dir.service("web", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "web", state_is("running"), 5s, "running");
    const std::string plain_env = "-u NO_COLOR TERM=xterm";

    auto probe = on_terminal(pkitd, plain_env, "status");
    if (!coloured(probe)) {
        PKIT_SKIP("script gives no terminal here: " + probe.all());
    }
    auto explicit_auto = on_terminal(pkitd, plain_env, "--color auto status");
    CHECK(coloured(explicit_auto));
    auto dumb = on_terminal(pkitd, "-u NO_COLOR TERM=dumb", "status");
    INFO(dumb.all());
    CHECK(dumb.exit_code == 0);
    CHECK(dumb.out.find("running") != std::string::npos);
    CHECK_FALSE(coloured(dumb));
    auto dumb_show = on_terminal(pkitd, "-u NO_COLOR TERM=dumb", "show web");
    CHECK(dumb_show.out.find("web: running") != std::string::npos);
    CHECK_FALSE(coloured(dumb_show));
    auto never = on_terminal(pkitd, plain_env, "--color never status");
    CHECK_FALSE(coloured(never));
    // always: even through a pipe, with NO_COLOR and a dumb terminal.
    auto piped = run_ctl({"--socket", pkitd.socket(), "--color", "always", "status"}, 20s,
                         {"NO_COLOR=1", "TERM=dumb"});
    CHECK(piped.exit_code == 0);
    CHECK(piped.out.find("\x1b[32mrunning\x1b[0m") != std::string::npos);
    auto shown = run_ctl({"--socket", pkitd.socket(), "show", "web", "--color", "always"});
    CHECK(shown.out.starts_with("web: \x1b[32mrunning\x1b[0m\n"));
    auto bad = run_ctl({"--socket", pkitd.socket(), "--color", "sometimes", "status"});
    CHECK(bad.exit_code == 2);
    CHECK(bad.err.find("--color") != std::string::npos);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("ctl messages: every duration option takes 5, 5s and 1m30s, and says so when wrong") {
    TempDir dir;
    dir.service("web", sh_command("echo hello; exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "web", state_is("running"), 5s, "running");
    for (const char* within : {"5", "5s", "1m30s"}) {
        auto waited = run_ctl({"--socket", pkitd.socket(), "wait", "--within", within, "web"});
        CHECK_MESSAGE(waited.exit_code == 0, within, ": ", waited.all());
    }
    for (const char* since : {"5", "5s", "1m30s"}) {
        auto logs = run_ctl({"--socket", pkitd.socket(), "logs", "--since", since, "web"});
        CHECK_MESSAGE(logs.exit_code == 0, since, ": ", logs.all());
    }
    for (const char* timeout : {"5", "5s", "1m30s", "0.5"}) {
        auto status = run_ctl({"--socket", pkitd.socket(), "--timeout", timeout, "status"});
        CHECK_MESSAGE(status.exit_code == 0, timeout, ": ", status.all());
    }
    // One message for each, naming the option and the forms it takes; no CLI11 range.
    auto bad_timeout = run_ctl({"--socket", pkitd.socket(), "--timeout", "abc", "status"});
    CHECK(bad_timeout.exit_code == 2);
    CHECK(bad_timeout.err ==
          "pkitctl: --timeout: \"abc\" is not a duration (such as 5, 30s, 1m30s, 250ms)\n");
    auto bad_within = run_ctl({"--socket", pkitd.socket(), "wait", "--within", "soon", "web"});
    CHECK(bad_within.exit_code == 2);
    CHECK(bad_within.err ==
          "pkitctl: --within: \"soon\" is not a duration (such as 5, 30s, 1m30s, 250ms)\n");
    auto bad_since = run_ctl({"--socket", pkitd.socket(), "logs", "--since", "-1", "web"});
    CHECK(bad_since.exit_code == 2);
    CHECK(bad_since.err ==
          "pkitctl: --since: \"-1\" is not a duration (such as 5, 30s, 1m30s, 250ms)\n");
    auto zero = run_ctl({"--socket", pkitd.socket(), "--timeout", "0", "status"});
    CHECK(zero.exit_code == 2);
    CHECK(zero.err == "pkitctl: --timeout: must be more than 0\n");
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("ctl messages: an unknown service name gets the closest one pkitd has") {
    TempDir dir;
    dir.service("web", sh_command("exec sleep 1000"));
    dir.service("worker", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    for (const char* command : {"status", "restart", "logs", "explain", "show"}) {
        auto typo = run_ctl({"--socket", pkitd.socket(), command, "wbe"});
        CHECK_MESSAGE(typo.exit_code == 1, command);
        CHECK_MESSAGE(typo.err ==
                          "pkitctl: unknown_service: unknown service \"wbe\"; did you "
                          "mean \"web\"?\n",
                      command, ": ", typo.err);
    }
    auto far = run_ctl({"--socket", pkitd.socket(), "status", "database"});
    CHECK(far.exit_code == 1);
    CHECK(far.err == "pkitctl: unknown_service: unknown service \"database\"\n");
    // The protocol's message carries it too, for any client.
    Client client = pkitd.client();
    json reply = client.request({{"cmd", "stop"}, {"services", {"workr"}}});
    CHECK(reply["error"]["message"] == "unknown service \"workr\"; did you mean \"worker\"?");
    CHECK(pkitd.stop() == 0);
}
