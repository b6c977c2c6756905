// Variables and the environment of every run (SPEC §13), seen from real children:
// where ${VAR} expands, the order of the environment's sources, the account of `user`,
// an undefined variable as a launch failure, and --check's warnings.

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

using Lines = std::vector<std::string>;

}  // namespace

TEST_CASE("variables expand in command, cwd, env values and env_file paths, from a real child") {
    TempDir dir;
    write_file(dir.path() / "a1.env", "FROM_FILE=yes\n");
    const auto lines = output_of(
        dir,
        "command = [\"/bin/sh\", \"-c\", \"echo \\\"$1|$2|$3\\\"; pwd; echo $FROM_FILE; echo $P; "
        "echo $D\", \"sh\", \"${WORD}\", \"${UNSET_HERE:-fallback}\", \"$$${WORD}$HOME\"]\n"
        "cwd = \"${BASE}\"\n"
        "env_file = \"${BASE}/a${PKIT_INSTANCE}.env\"\n"
        "env = { WORD = \"w\", P = \"/opt/x/bin:${PATH}\", D = \"${WORD:-before-env}\" }\n",
        {"BASE=" + dir.str()});
    // $$ is a literal $, and $HOME (no braces) is left for the program.
    REQUIRE(lines.size() == 5);
    CHECK(lines[0] == "w|fallback|$w$HOME");
    CHECK(lines[1] == dir.str());
    CHECK(lines[2] == "yes");
    // env values expand from the environment before env: PATH extends pkitd's, and WORD
    // is not yet defined for D.
    CHECK(lines[3] == "/opt/x/bin:" + std::string(std::getenv("PATH")));
    CHECK(lines[4] == "before-env");
}

TEST_CASE("probe targets expand: a file probe and an exec probe find their paths") {
    TempDir dir;
    dir.service("svc",
                "command = [\"/bin/sh\", \"-c\", \"touch \\\"$FLAG\\\"; exec sleep 1000\"]\n"
                "env = { FLAG = " +
                    toml_str(dir.file("up")) +
                    " }\n[ready]\nfile = \"${FLAG}\"\ninterval = \"50ms\"\n"
                    "[health]\nexec = [\"/bin/test\", \"-e\", \"${FLAG}\"]\n"
                    "interval = \"100ms\"\nfailures = 1\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json s = wait_status(
        client, "svc",
        [](const json& st) {
            return st.value("ready", false) && st["health"].is_object() &&
                   st["health"].value("status", "") == "healthy";
        },
        10s, "ready by its file probe, healthy by its exec probe");
    CHECK(s["state"] == "running");
    CHECK(s["run"] == 1);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("the environment's sources apply in SPEC order, each later one overriding") {
    TempDir dir;
    write_file(dir.path() / "daemon.env", "V2=daemon_file\nV3=daemon_file\n");
    write_file(dir.path() / "svc.env", "V4=svc_file\nV5=svc_file\n");
    dir.daemon_config("env_file = " + toml_str(dir.file("daemon.env")) +
                      "\n[env]\nV3 = \"daemon_env\"\nV4 = \"daemon_env\"\n");
    const auto lines = output_of(
        dir,
        sh_command("echo $V1 $V2 $V3 $V4 $V5 $V6 $PKIT_SERVICE $PKIT_INSTANCE $PKIT_RUN") +
            "env_file = " + toml_str(dir.file("svc.env")) +
            "\nenv = { V5 = \"svc_env\", PKIT_SERVICE = \"mine\" }\n",
        {"V1=pkitd", "V2=pkitd", "V6=pkitd"});
    CHECK(lines == Lines{"pkitd daemon_file daemon_env svc_file svc_env pkitd svc 1 1"});
}

TEST_CASE("clear_env leaves out pkitd's environment only; pkitd.toml's env still applies") {
    TempDir dir;
    dir.daemon_config("[env]\nTZ = \"UTC\"\n");
    const auto lines =
        output_of(dir, "command = [\"/usr/bin/env\"]\nclear_env = true\n", {"PKIT_ITEST_GONE=1"});
    CHECK(lines == Lines{"PKIT_SERVICE=svc", "PKIT_INSTANCE=1", "PKIT_RUN=1", "TZ=UTC"});
}

TEST_CASE("user sets HOME, USER, LOGNAME and SHELL from the account's passwd entry") {
    // As root, another account; otherwise pkitd's own (the only user it may name).
    const passwd* entry = is_root() ? ::getpwnam("nobody") : ::getpwuid(::getuid());
    REQUIRE_MESSAGE(entry != nullptr, "no passwd entry for the test's account");
    const std::string name = entry->pw_name;
    const std::string home = entry->pw_dir;
    const std::string shell = entry->pw_shell;
    TempDir dir;
    ::chmod(dir.path().c_str(), 0755);
    const auto lines = output_of(
        dir, sh_command("echo \"$HOME|$USER|$LOGNAME|$SHELL\"") + "user = " + toml_str(name) + "\n",
        {"HOME=/pkitd/home", "USER=pkitd-user", "LOGNAME=pkitd-user", "SHELL=/bin/false"});
    CHECK_MESSAGE(lines == Lines{home + "|" + name + "|" + name + "|" + shell},
                  (lines.empty() ? std::string("no output") : lines[0]));
}

TEST_CASE("an undefined variable is an undefined_variable launch failure naming it") {
    TempDir dir;
    dir.service("svc", "command = [\"/bin/echo\", \"--port=${PKIT_ITEST_NO_PORT}\"]\n" +
                           restart_table("on_crash", "50ms", 1.0, 0) +
                           "[give_up_when]\nlaunch_errors = [\"undefined_variable\"]\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json s = wait_status(client, "svc", state_is("failed"), 5s, "the launch fails");
    CHECK(s["stopped"] == "gave_up");
    CHECK(s["last_launch_error"] ==
          "undefined_variable: PKIT_ITEST_NO_PORT: not set in the run's environment and no "
          "default (in command[1])");
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("--check warns about variables no source defines; the exit status stays 0") {
    TempDir dir;
    dir.service("svc",
                "command = [\"/bin/echo\", \"${PKIT_ITEST_NOWHERE}\", \"${DEFINED}\"]\n"
                "env = { DEFINED = \"1\" }\n");
    for (const auto& result :
         {run_pkitd({"--check", "--config", dir.str()}), run_ctl({"check", dir.str()})}) {
        CHECK_MESSAGE(result.exit_code == 0, result.all());
        CHECK_MESSAGE(result.err.find(dir.str() +
                                      "/services/svc.toml:1:25: warning: command: variable "
                                      "\"PKIT_ITEST_NOWHERE\" is not defined") != std::string::npos,
                      result.err);
        CHECK(result.err.find("DEFINED") == std::string::npos);
    }
}

TEST_CASE("an unterminated ${ is a configuration error at its value") {
    TempDir dir;
    dir.service("svc", "command = [\"/bin/echo\"]\ncwd = \"/srv/${APP\"\n");
    auto result = run_pkitd({"--check", "--config", dir.str()});
    CHECK(result.exit_code == 2);
    CHECK_MESSAGE(result.err.find("services/svc.toml:2:7: error: cwd: \"${\" without a closing "
                                  "\"}\"") != std::string::npos,
                  result.err);
}
