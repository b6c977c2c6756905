// What a run starts with (SPEC §2 top-level keys, §3): its own session, stdin
// /dev/null, default signal dispositions and an empty mask, the configured
// environment, cwd, umask and rlimits, and argv[0] looked up in its own PATH.

#include <sys/resource.h>

#include <sstream>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

TEST_CASE("a run gets its own session, stdin /dev/null, no ignored or blocked signal") {
    TempDir dir;
    // Field 5 of /proc/PID/stat is the process group, 6 the session; cat's SigIgn and
    // SigBlk show what the shell inherited from pkitd.
    const auto lines = output_of(
        dir, sh_command("echo pid $$$$; cut -d' ' -f5,6 /proc/$$$$/stat; readlink /proc/$$$$/fd/0; "
                        "grep -E '^Sig(Ign|Blk)' /proc/self/status"));
    REQUIRE(lines.size() == 5);
    const std::string pid = lines[0].substr(4);
    CHECK(lines[1] == pid + " " + pid);
    CHECK(lines[2] == "/dev/null");
    CHECK(lines[3] == "SigBlk:\t0000000000000000");
    CHECK(lines[4] == "SigIgn:\t0000000000000000");
}

TEST_CASE("env adds to pkitd's environment and clear_env starts from nothing") {
    TempDir dir;
    SUBCASE("env on top of pkitd's environment") {
        const auto lines = output_of(dir,
                                     "command = [\"/bin/sh\", \"-c\", \"echo $FOO; "
                                     "echo $${PKIT_ITEST_MARKER:+inherited}\"]\n"
                                     "env = { FOO = \"bar baz\" }\n");
        CHECK(lines == std::vector<std::string>{"bar baz", "inherited"});
    }
    SUBCASE("clear_env") {
        const auto lines = output_of(dir,
                                     "command = [\"/usr/bin/env\"]\nclear_env = true\n"
                                     "env = { ONLY = \"1\" }\n");
        CHECK(lines == std::vector<std::string>{"PKIT_SERVICE=svc", "PKIT_INSTANCE=1", "PKIT_RUN=1",
                                                "ONLY=1"});
    }
}

TEST_CASE("env_file is read at each run's start and env overrides it") {
    TempDir dir;
    write_file(dir.path() / "app.env", "# a comment\nFROM_FILE=file\nQUOTED=\"a b\"\nBOTH=file\n");
    const auto lines = output_of(dir, sh_command("echo $FROM_FILE/$QUOTED/$BOTH") +
                                          "env_file = " + toml_str(dir.file("app.env")) +
                                          "\nenv = { BOTH = \"env\" }\n");
    CHECK(lines == std::vector<std::string>{"file/a b/env"});
}

TEST_CASE("a missing env_file is a bad_env_file launch failure") {
    TempDir dir;
    dir.service("svc", sh_command("exit 0") + "env_file = " + toml_str(dir.file("missing.env")) +
                           "\n" + restart_table("on_crash", "50ms", 1.0, 0));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json s = wait_status(client, "svc", state_is("failed"), 5s, "the launch fails");
    const std::string error = s.value("last_launch_error", json("")).get<std::string>();
    CHECK_MESSAGE(error.rfind("bad_env_file", 0) == 0, error);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("cwd, umask and rlimits apply to the run") {
    TempDir dir;
    const auto lines =
        output_of(dir, sh_command("pwd; umask; ulimit -n") + "cwd = " + toml_str(dir.str()) +
                           "\numask = \"027\"\n[rlimits]\nnofile = 123\n");
    CHECK(lines == std::vector<std::string>{dir.str(), "0027", "123"});
}

TEST_CASE("pkitd raises its open file limit to the hard one, and a run gets the original") {
    rlimit saved{};
    REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved) == 0);
    REQUIRE_MESSAGE(saved.rlim_max > 256, "the hard limit leaves no room to see the raise");
    // pkitd inherits the lowered soft limit, as under `ulimit -Sn 256`.
    rlimit lowered{256, saved.rlim_max};
    REQUIRE(::setrlimit(RLIMIT_NOFILE, &lowered) == 0);
    TempDir dir;
    // $PPID is pkitd: the run reads its own limit and its parent's.
    const auto lines = output_of(dir, sh_command("ulimit -Sn; ulimit -Hn; "
                                                 "grep 'Max open files' /proc/$PPID/limits"));
    ::setrlimit(RLIMIT_NOFILE, &saved);
    const std::string hard =
        saved.rlim_max == RLIM_INFINITY ? "unlimited" : std::to_string(saved.rlim_max);
    std::string all;
    for (const auto& line : lines) {
        all += line + "\n";
    }
    REQUIRE_MESSAGE(lines.size() == 3, all);
    CHECK(lines[0] == "256");
    CHECK(lines[1] == hard);
    // "Max open files  SOFT  HARD  files": pkitd's soft limit is its hard one.
    std::istringstream fields(lines[2].substr(std::string("Max open files").size()));
    std::string soft;
    std::string pkitd_hard;
    fields >> soft >> pkitd_hard;
    CHECK_MESSAGE(soft == hard, lines[2]);
    CHECK(pkitd_hard == hard);
}

TEST_CASE("argv[0] without a slash is looked up in the service's own PATH") {
    TempDir dir;
    dir.script("bin/pkit-itest-tool", "echo tool ran");
    const auto lines = output_of(dir, "command = [\"pkit-itest-tool\"]\nenv = { PATH = " +
                                          toml_str(dir.file("bin") + ":/usr/bin:/bin") + " }\n");
    CHECK(lines == std::vector<std::string>{"tool ran"});
}
