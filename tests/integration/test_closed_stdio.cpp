// pkitd started with its standard fds closed (`pkitd <&- >&- 2>&-`, as some service
// managers and shells do) opens /dev/null on them first, so that libuv's own
// descriptors cannot take fds 0-2: services run, the socket answers, SIGTERM ends it
// with 0.

#include <signal.h>
#include <unistd.h>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// Where fd `fd` of process `pid` points.
std::string fd_target(pid_t pid, int fd) {
    std::error_code error;
    auto target =
        fs::read_symlink("/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd), error);
    return error ? "(closed)" : target.string();
}

}  // namespace

TEST_CASE("pkitd started with fds 0, 1 and 2 closed runs its services and exits 0") {
    TempDir dir;
    // One long run, and one that restarts: every restart is another fork.
    dir.service("web",
                sh_command("echo hello; touch " + dir.file("web.ran") + "; exec sleep 1000"));
    dir.service("flaky", sh_command("echo again >> " + dir.file("flaky.runs") + "; exit 1") +
                             restart_table("always", "50ms", 1.0));
    Daemon pkitd(dir, {.closed_stdio = true});
    pkitd.wait_ready();
    for (int fd = 0; fd <= 2; ++fd) {
        CHECK_MESSAGE(fd_target(pkitd.pid(), fd) == "/dev/null", "fd " << fd);
    }

    Client client = pkitd.client();
    wait_file(dir.file("web.ran"));
    wait_status(client, "web", state_is("running"), 10s, "web runs");
    wait_for([&] { return read_lines(dir.file("flaky.runs")).size() >= 3; }, 10s,
             "flaky restarted twice");
    CHECK(status(client, "flaky").value("restarts", 0) >= 2);

    CHECK(pkitd.stop() == 0);
    const auto left = marker_processes(pkitd.marker());
    CHECK_MESSAGE(left.empty(), "left behind:" << describe(left));
}
