// Running without root (SPEC §1, §10): a pkitd that cannot create /run/pkit and was
// given no socket puts it at $XDG_RUNTIME_DIR/pkit/pkitd.sock, says so in its log,
// and pkitctl, given no socket either, finds it there.

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

constexpr uid_t k_nobody = 65534;

std::vector<std::string> as_nobody() {
    return {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
}

}  // namespace

TEST_CASE("an unprivileged pkitd without --socket serves under $XDG_RUNTIME_DIR") {
    if (!is_root() || !have_program("setpriv")) {
        MESSAGE("skipped: needs root and setpriv to run pkitd as uid 65534");
        return;
    }
    // /run/pkit is root's (created here when missing) and uid 65534 may not write
    // there, which is the point.
    struct stat info {};
    ::mkdir("/run/pkit", 0755);
    if (::stat("/run/pkit/pkitd.sock", &info) == 0) {
        MESSAGE(
            "skipped: a system pkitd's socket exists at /run/pkit/pkitd.sock, and pkitctl "
            "rightly prefers it");
        return;
    }
    TempDir dir;
    // uid 65534 reads the tree and owns its runtime directory.
    ::chmod(dir.str().c_str(), 0755);
    ::chmod((dir.path() / "services").c_str(), 0755);
    const std::string runtime = dir.file("xdg");
    ::mkdir(runtime.c_str(), 0700);
    REQUIRE(::chown(runtime.c_str(), k_nobody, k_nobody) == 0);
    dir.service("web", sh_command("exec sleep 1000"));
    const std::string expected = runtime + "/pkit/pkitd.sock";

    Daemon daemon(dir, {.wrapper = as_nobody(),
                        .socket = expected,
                        .env = {"XDG_RUNTIME_DIR=" + runtime},
                        .omit_socket_arg = true});
    daemon.wait_ready();
    CHECK_MESSAGE(daemon.log().find(expected) != std::string::npos, daemon.log());
    CHECK_MESSAGE(daemon.log().find("/run/pkit") != std::string::npos, daemon.log());

    // run_command takes a path in argv[0]: env finds setpriv.
    std::vector<std::string> ctl = {"/usr/bin/env"};
    const std::vector<std::string> nobody = as_nobody();
    ctl.insert(ctl.end(), nobody.begin(), nobody.end());
    ctl.insert(ctl.end(), {PKITCTL_BIN, "status", "web"});
    auto deadline = Clock::now() + 10s;
    CommandResult result;
    do {
        result = run_command(ctl, 10s, {"XDG_RUNTIME_DIR=" + runtime});
    } while (result.exit_code != 0 && Clock::now() < deadline);
    CHECK_MESSAGE(result.exit_code == 0, result.all());
    CHECK_MESSAGE(result.out.find("web") != std::string::npos, result.out);
    CHECK_MESSAGE(result.out.find("running") != std::string::npos, result.out);
    // setpriv execs pkitd, so the forked pid is pkitd itself (the harness's wrapper
    // rule would pick pkitd's first child).
    ::kill(daemon.pid(), SIGTERM);
    CHECK(daemon.wait_exit(15s) == 0);
}

TEST_CASE("pkitctl check as an unprivileged user resolves user and group names") {
    // pkitctl is linked statically and looks accounts up through getent(1): as uid 65534,
    // `user = "nobody"` and `group = "nogroup"` name its own ids and pass; `user =
    // "root"` is a positioned error.
    if (!is_root() || !have_program("setpriv") || !have_program("getent")) {
        MESSAGE("skipped: needs root, setpriv and getent to run pkitctl as uid 65534");
        return;
    }
    TempDir dir;
    dir.service("own", "command = [\"sleep\", \"1\"]\nuser = \"nobody\"\ngroup = \"nogroup\"\n");
    std::filesystem::permissions(
        dir.path(), std::filesystem::perms::others_read | std::filesystem::perms::others_exec,
        std::filesystem::perm_options::add);
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir.path())) {
        std::filesystem::permissions(
            entry.path(), std::filesystem::perms::others_read | std::filesystem::perms::others_exec,
            std::filesystem::perm_options::add);
    }
    std::vector<std::string> check = {"/usr/bin/env"};
    const std::vector<std::string> nobody = as_nobody();
    check.insert(check.end(), nobody.begin(), nobody.end());
    check.insert(check.end(), {PKITCTL_BIN, "check", dir.path().string()});
    CommandResult valid = run_command(check);
    CHECK_MESSAGE(valid.exit_code == 0, valid.all());
    CHECK_MESSAGE(valid.out.find("valid: 1 service") != std::string::npos, valid.all());

    dir.service("other", "command = [\"sleep\", \"1\"]\nuser = \"root\"\n");
    std::filesystem::permissions(dir.path() / "services" / "other.toml",
                                 std::filesystem::perms::others_read,
                                 std::filesystem::perm_options::add);
    CommandResult refused = run_command(check);
    CHECK_MESSAGE(refused.exit_code == 2, refused.all());
    CHECK_MESSAGE(
        refused.err.find("other.toml:2:8: error: user \"root\": pkitd runs as uid 65534") !=
            std::string::npos,
        refused.all());
}
