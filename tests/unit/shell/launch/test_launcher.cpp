// launch(): what the child gets (output pipes, environment, PATH, cwd, umask, rlimits,
// credentials) and how each launch failure is named.

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "daemon/shell/launch/launch_env.hpp"
#include "daemon/shell/launch/launcher.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

using config::LaunchError;

TEST_CASE("a launched run's stdout and stderr arrive as lines, and its exit status is its own") {
    TestLoop loop;
    auto captured = run_to_end(
        loop, make_spec({"/bin/sh", "-c", "echo out1; echo err1 >&2; echo out2; exit 3"}));
    CHECK(captured.pid > 0);
    CHECK(captured.out == std::vector<std::string>{"out1", "out2"});
    CHECK(captured.err == std::vector<std::string>{"err1"});
    REQUIRE(WIFEXITED(captured.status));
    CHECK(WEXITSTATUS(captured.status) == 3);
    CHECK(loop.close() == 0);
}

TEST_CASE("stdin of a run is /dev/null") {
    TestLoop loop;
    auto captured = run_to_end(loop, make_spec({"/bin/sh", "-c", "cat; echo done"}));
    CHECK(captured.out == std::vector<std::string>{"done"});
    CHECK(loop.close() == 0);
}

TEST_CASE("environment: pkitd's, then env_file, then env, then extra_env; clear_env starts empty") {
    TestLoop loop;
    TempDir dir;
    setenv("PKIT_T_A", "environ", 1);
    setenv("PKIT_T_D", "environ", 1);
    auto env_file = dir.write(".env",
                              "# comment\n\nexport PKIT_T_A=file\nPKIT_T_B='file b'\n"
                              "PKIT_T_C=\"file \\\"c\\\"\"  # trailing\n");
    auto spec = make_spec({"/bin/sh", "-c", "echo \"$PKIT_T_A|$PKIT_T_B|$PKIT_T_C|$PKIT_T_D\""});
    spec.process.edit().env_files = {env_file};
    spec.process.edit().env = {{"PKIT_T_B", "env"}};

    SUBCASE("layers override in order") {
        auto captured = run_to_end(loop, spec, {{"PKIT_T_C", "extra"}});
        CHECK(captured.out == std::vector<std::string>{"file|env|extra|environ"});
    }
    SUBCASE("env_file values keep their quotes' meaning") {
        spec.process.edit().env.clear();
        auto captured = run_to_end(loop, spec);
        CHECK(captured.out == std::vector<std::string>{"file|file b|file \"c\"|environ"});
    }
    SUBCASE("clear_env drops pkitd's environment but keeps the service's own") {
        spec.process.edit().clear_env = true;
        auto captured = run_to_end(loop, spec);
        CHECK(captured.out == std::vector<std::string>{"file|env|file \"c\"|"});
    }
    unsetenv("PKIT_T_A");
    unsetenv("PKIT_T_D");
    CHECK(loop.close() == 0);
}

TEST_CASE("dotenv parsing") {
    auto parsed = parse_dotenv(
        "A=1\n  export B = two words  \nC='lit\\n'\nD=\"esc\\n\"\nE=\nF=x #c\n#G=no\r\nH=a=b\n");
    REQUIRE(parsed.has_value());
    std::vector<std::pair<std::string, std::string>> expected{
        {"A", "1"}, {"B", "two words"}, {"C", "lit\\n"}, {"D", "esc\n"},
        {"E", ""},  {"F", "x"},         {"H", "a=b"}};
    CHECK(*parsed == expected);
    CHECK(parse_dotenv("A=1\nnot a pair\n").error() == "2: expected KEY=VALUE");
    CHECK(parse_dotenv("A=\"open\n").error() == "1: unterminated quote");
}

TEST_CASE("argv[0] without a slash is looked up in the service's own PATH") {
    TestLoop loop;
    TempDir dir;
    dir.write("pkit-test-tool", "#!/bin/sh\necho tool ran\n", 0755);
    SUBCASE("the default PATH finds sh") {
        auto captured = run_to_end(loop, make_spec({"sh", "-c", "echo hi"}));
        CHECK(captured.out == std::vector<std::string>{"hi"});
    }
    SUBCASE("env PATH is used for the lookup") {
        auto spec = make_spec({"pkit-test-tool"});
        spec.process.edit().env = {{"PATH", "/nonexistent:" + dir.path() + ":/usr/bin:/bin"}};
        auto captured = run_to_end(loop, spec);
        CHECK(captured.out == std::vector<std::string>{"tool ran"});
    }
    SUBCASE("a program absent from PATH is not_found, without running anything") {
        auto failure = launch_failure(make_spec({"pkit-test-tool"}));
        CHECK(failure.kind == LaunchError::not_found);
        CHECK(failure.message == "not_found: pkit-test-tool: No such file or directory");
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("cwd, umask and rlimits apply to the child") {
    TestLoop loop;
    TempDir dir;
    auto spec = make_spec({"/bin/sh", "-c", "pwd; umask; ulimit -n; ulimit -Hn"});
    spec.process.edit().cwd = dir.path();
    spec.process.edit().umask = 027;
    spec.process.edit().rlimits = {config::Rlimit{RLIMIT_NOFILE, "nofile", 123}};
    auto captured = run_to_end(loop, spec);
    CHECK(captured.out == std::vector<std::string>{dir.path(), "0027", "123", "123"});
    CHECK(loop.close() == 0);
}

TEST_CASE("a launch that would take the descriptors kept for pkitd fails as resources") {
    TestLoop loop;
    rlimit saved{};
    REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved) == 0);
    rlimit small = saved;
    small.rlim_cur = 256;  // a reserve of 32 (an eighth)
    REQUIRE(::setrlimit(RLIMIT_NOFILE, &small) == 0);
    // Every descriptor below 221 in use: 35 are free, but a launch's six pipe ends
    // (221-226) would reach into the last 32.
    std::vector<int> held;
    for (;;) {
        int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        REQUIRE(fd >= 0);
        if (fd >= 256 - 35) {
            ::close(fd);
            break;
        }
        held.push_back(fd);
    }
    auto failure = launch_failure(make_spec({"/bin/true"}));
    CHECK(failure.kind == LaunchError::resources);
    CHECK(failure.message.starts_with(
        "resources: pipe: Too many open files (pkitd keeps the last descriptors under its "
        "limit of 256"));
    // Ten descriptors freed: the launch fits again.
    for (int i = 0; i < 10; ++i) {
        ::close(held.back());
        held.pop_back();
    }
    auto captured = run_to_end(loop, make_spec({"/bin/sh", "-c", "echo ran"}));
    CHECK(captured.out == std::vector<std::string>{"ran"});
    for (int fd : held) {
        ::close(fd);
    }
    ::setrlimit(RLIMIT_NOFILE, &saved);
    CHECK(loop.close() == 0);
}

TEST_CASE("launch failures are named with their reason") {
    TempDir dir;
    SUBCASE("not_found for an absolute path") {
        auto failure = launch_failure(make_spec({"/nonexistent/pkit-bin"}));
        CHECK(failure.kind == LaunchError::not_found);
        CHECK(failure.message == "not_found: /nonexistent/pkit-bin: No such file or directory");
    }
    SUBCASE("permission_denied for a file without execute permission") {
        auto path = dir.write("script", "#!/bin/sh\necho no\n", 0644);
        auto failure = launch_failure(make_spec({path}));
        CHECK(failure.kind == LaunchError::permission_denied);
        CHECK(failure.message == "permission_denied: " + path + ": Permission denied");
    }
    SUBCASE("exec_format for an executable that is no program") {
        auto path = dir.write("garbage", "\x01\x02 not a program\n", 0755);
        auto failure = launch_failure(make_spec({path}));
        CHECK(failure.kind == LaunchError::exec_format);
        CHECK(failure.message == "exec_format: " + path + ": Exec format error");
    }
    SUBCASE("bad_cwd") {
        auto spec = make_spec({"/bin/true"});
        spec.process.edit().cwd = dir.path() + "/missing";
        auto failure = launch_failure(spec);
        CHECK(failure.kind == LaunchError::bad_cwd);
        CHECK(failure.message == "bad_cwd: " + dir.path() + "/missing: No such file or directory");
    }
    SUBCASE("bad_env_file, missing or malformed") {
        auto spec = make_spec({"/bin/true"});
        spec.process.edit().env_files = {dir.path() + "/missing.env"};
        auto failure = launch_failure(spec);
        CHECK(failure.kind == LaunchError::bad_env_file);
        CHECK(failure.message ==
              "bad_env_file: " + dir.path() + "/missing.env: No such file or directory");
        spec.process.edit().env_files = {dir.write("bad.env", "OK=1\nbroken line\n")};
        failure = launch_failure(spec);
        CHECK(failure.message == "bad_env_file: " + dir.path() + "/bad.env:2: expected KEY=VALUE");
    }
    SUBCASE("bad_user for an unknown user or group") {
        auto spec = make_spec({"/bin/true"});
        spec.process.edit().user.name = "pkit-no-such-user";
        auto failure = launch_failure(spec);
        CHECK(failure.kind == LaunchError::bad_user);
        CHECK(failure.message == "bad_user: pkit-no-such-user: unknown user");
        spec.process.edit().user = {};
        spec.process.edit().group.name = "pkit-no-such-group";
        CHECK(launch_failure(spec).message == "bad_user: pkit-no-such-group: unknown group");
    }
}

TEST_CASE("user and group are set in the child (root only)") {
    if (geteuid() != 0) {
        MESSAGE("skipped: needs root to change credentials");
        return;
    }
    TestLoop loop;
    auto spec = make_spec({"/bin/sh", "-c", "id -u; id -g; id -G"});
    SUBCASE("a user by name brings its primary group") {
        spec.process.edit().user.name = "nobody";
        auto captured = run_to_end(loop, spec);
        REQUIRE(captured.out.size() == 3);
        CHECK(captured.out[0] == "65534");
        CHECK(captured.out[1] == "65534");
    }
    SUBCASE("numeric user and group") {
        spec.process.edit().user.id = 4321;
        spec.process.edit().group.id = 4322;
        auto captured = run_to_end(loop, spec);
        CHECK(captured.out == std::vector<std::string>{"4321", "4322", "4322"});
    }
    CHECK(loop.close() == 0);
}

}  // namespace pkit::shell::test
