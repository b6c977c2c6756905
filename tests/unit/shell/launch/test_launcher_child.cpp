// The state a run starts in (SPEC §3): its own session, default signal dispositions and
// an empty mask whatever pkitd ignores or blocks, only fds 0-2, and the stop sequence
// of SPEC §7.

#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include "daemon/shell/launch/launcher.hpp"
#include "daemon/shell/launch/reaper.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

namespace {

// The value of `field` ("SigBlk") in /proc/PID/status.
std::string proc_status_field(pid_t pid, const std::string& field) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.starts_with(field + ":")) {
            auto value = line.substr(field.size() + 1);
            return value.substr(value.find_first_not_of(" \t"));
        }
    }
    return "";
}

// "0 -> /dev/null, 1 -> pipe:[123], ..." for messages.
std::string describe_fds(pid_t pid) {
    std::string text;
    std::error_code error;
    for (const auto& entry :
         std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", error)) {
        text += (text.empty() ? "" : ", ") + entry.path().filename().string() + " -> " +
                std::filesystem::read_symlink(entry.path(), error).string();
    }
    return text;
}

std::vector<int> open_fds(pid_t pid) {
    std::vector<int> fds;
    for (const auto& entry :
         std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
        fds.push_back(std::stoi(entry.path().filename().string()));
    }
    std::sort(fds.begin(), fds.end());
    return fds;
}

// Whether `pid` sleeps in nanosleep or clock_nanosleep (the first field of
// /proc/PID/syscall; where that cannot be read, its state in /proc/PID/stat is S),
// polled for up to 5 s.
bool wait_asleep(pid_t pid) {
    const std::string proc = "/proc/" + std::to_string(pid);
    auto asleep = [&] {
        std::ifstream syscall_file(proc + "/syscall");
        if (long number = -1; syscall_file >> number) {
#ifdef SYS_nanosleep
            if (number == SYS_nanosleep) {
                return true;
            }
#endif
            return number == SYS_clock_nanosleep;
        }
        std::ifstream stat_file(proc + "/stat");
        std::string stat((std::istreambuf_iterator<char>(stat_file)), {});
        auto paren = stat.rfind(')');
        return paren != std::string::npos && stat.compare(paren, 3, ") S") == 0;
    };
    for (int i = 0; i < 1000; ++i) {
        if (asleep()) {
            return true;
        }
        usleep(5000);
    }
    return false;
}

Launched launch_ok(const config::ServiceSpec& spec) {
    auto launched = launch(LaunchRequest{&spec, 1, {}});
    REQUIRE_MESSAGE(launched.has_value(), (launched ? "" : launched.error().message));
    return *launched;
}

void close_pipes(const Launched& launched) {
    close(launched.stdout_fd);
    close(launched.stderr_fd);
}

}  // namespace

TEST_CASE("a run gets default dispositions, an empty mask, its own session and only fds 0-2") {
    // What pkitd ignores and blocks must not leak into its children.
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    struct sigaction saved_pipe {};
    sigaction(SIGPIPE, &ignore, &saved_pipe);
    sigset_t term;
    sigset_t saved_mask;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    sigprocmask(SIG_BLOCK, &term, &saved_mask);
    int leaked = open("/dev/null", O_RDONLY);  // deliberately not close-on-exec

    auto launched = launch_ok(make_spec({"/bin/sleep", "30"}));
    // launch() returns once the exec succeeded, so /proc shows sleep itself.
    CHECK(proc_status_field(launched.pid, "SigBlk") == "0000000000000000");
    CHECK(proc_status_field(launched.pid, "SigIgn") == "0000000000000000");
    CHECK(getsid(launched.pid) == launched.pid);
    CHECK(getpgid(launched.pid) == launched.pid);
    // sleep's own start-up (the dynamic loader, setlocale) opens and closes files for a
    // moment after the exec: the fds are read once it sleeps.
    REQUIRE_MESSAGE(wait_asleep(launched.pid), "sleep did not reach its nanosleep within 5 s");
    CHECK_MESSAGE((open_fds(launched.pid) == std::vector<int>{0, 1, 2}),
                  describe_fds(launched.pid));
    CHECK((fcntl(launched.stdout_fd, F_GETFL) & O_NONBLOCK) != 0);
    CHECK((fcntl(launched.stdout_fd, F_GETFD) & FD_CLOEXEC) != 0);

    stop_signal(launched.pid, SIGTERM, true);
    int status = wait_for(launched.pid);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGTERM);

    close_pipes(launched);
    close(leaked);
    sigprocmask(SIG_SETMASK, &saved_mask, nullptr);
    sigaction(SIGPIPE, &saved_pipe, nullptr);
}

TEST_CASE("with the low slots, a run shares no descriptor of pkitd's and pkitd keeps all of its") {
    // The child shares pkitd's table at clone time and unshares it below the slots: a
    // descriptor below them is copied (and must still be closed before exec), one above
    // is never the child's, and nothing the child closes may be pkitd's.
    int below = open("/dev/null", O_RDONLY);  // deliberately not close-on-exec
    REQUIRE(reserve_low_slots());
    int above[2];
    REQUIRE(pipe(above) == 0);  // deliberately not close-on-exec either
    for (int round = 0; round < 3; ++round) {
        auto launched =
            launch_ok(make_spec({"/bin/sh", "-c", "echo out; echo err >&2; exec sleep 30"}));
        REQUIRE_MESSAGE(wait_asleep(launched.pid), "sleep did not start within 5 s");
        CHECK_MESSAGE((open_fds(launched.pid) == std::vector<int>{0, 1, 2}),
                      describe_fds(launched.pid));
        for (int fd : {below, above[0], above[1], launched.stdout_fd, launched.stderr_fd}) {
            CHECK_MESSAGE(fcntl(fd, F_GETFD) >= 0, "pkitd lost fd ", fd);
        }
        signal_run(launched.pid, SIGKILL, true);
        wait_for(launched.pid);
        // The slots gave the pipes' write ends back: with the run gone, both ends see EOF
        // after its output.
        for (auto [fd, expected] : {std::pair{launched.stdout_fd, std::string("out\n")},
                                    std::pair{launched.stderr_fd, std::string("err\n")}}) {
            std::string got;
            char buffer[64];
            ssize_t n = -1;
            for (int polls = 0; n != 0 && polls < 500; ++polls) {  // up to 5 s
                pollfd ready{fd, POLLIN, 0};
                poll(&ready, 1, 10);
                while ((n = read(fd, buffer, sizeof buffer)) > 0) {
                    got.append(buffer, static_cast<std::size_t>(n));
                }
            }
            CHECK_MESSAGE(n == 0, "no EOF within 5 s");
            CHECK(got == expected);
        }
        close_pipes(launched);
    }
    close(above[0]);
    close(above[1]);
    close(below);
}

TEST_CASE("stop_signal reaches a stopped process: the signal, then SIGCONT") {
    auto launched = launch_ok(make_spec({"/bin/sleep", "30"}));
    REQUIRE(signal_run(launched.pid, SIGSTOP, false));
    int status = 0;
    REQUIRE(waitpid(launched.pid, &status, WUNTRACED) == launched.pid);
    REQUIRE(WIFSTOPPED(status));
    stop_signal(launched.pid, SIGTERM, false);
    status = wait_for(launched.pid);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGTERM);
    close_pipes(launched);
}

TEST_CASE("stop_signal sends SIGCONT before a stop-class signal, so a stopped run's trap runs") {
    // Sent after it, SIGCONT would discard the pending signal and the trap never ran.
    int signo = 0;
    std::string name;
    SUBCASE("SIGTSTP") {
        signo = SIGTSTP;
        name = "TSTP";
    }
    SUBCASE("SIGTTIN") {
        signo = SIGTTIN;
        name = "TTIN";
    }
    SUBCASE("SIGTTOU") {
        signo = SIGTTOU;
        name = "TTOU";
    }
    CHECK(stop_class_signal(signo));
    auto launched = launch_ok(make_spec(
        {"/bin/sh", "-c", "trap 'exit 7' " + name + "; echo armed; while :; do :; done"}));
    char text[16] = {};
    int flags = fcntl(launched.stdout_fd, F_GETFL);
    fcntl(launched.stdout_fd, F_SETFL, flags & ~O_NONBLOCK);
    REQUIRE(read(launched.stdout_fd, text, sizeof text - 1) > 0);  // the trap is set
    // Stopped, the run cannot take the signal before stop_signal has sent both.
    REQUIRE(signal_run(launched.pid, SIGSTOP, false));
    int status = 0;
    REQUIRE(waitpid(launched.pid, &status, WUNTRACED) == launched.pid);
    REQUIRE(WIFSTOPPED(status));
    CHECK(stop_signal(launched.pid, signo, false));
    std::optional<int> ended;
    for (int i = 0; i < 1000 && !ended; ++i) {
        if (waitpid(launched.pid, &status, WNOHANG) == launched.pid) {
            ended = status;
        } else {
            usleep(5000);
        }
    }
    if (!ended) {
        signal_run(launched.pid, SIGKILL, false);
        wait_for(launched.pid);
    }
    REQUIRE_MESSAGE(ended.has_value(), "the trap did not run within 5 s");
    CHECK(WIFEXITED(*ended));
    CHECK(WEXITSTATUS(*ended) == 7);
    close_pipes(launched);
}

TEST_CASE("group signals reach the whole process group of a run") {
    // As a subreaper the test inherits the orphaned sleep, so it can see it die.
    REQUIRE(become_subreaper_unless_pid1().has_value());
    auto launched = launch_ok(make_spec({"/bin/sh", "-c", "sleep 30 & echo $!; wait"}));
    char text[32] = {};
    int flags = fcntl(launched.stdout_fd, F_GETFL);
    fcntl(launched.stdout_fd, F_SETFL, flags & ~O_NONBLOCK);
    REQUIRE(read(launched.stdout_fd, text, sizeof text - 1) > 0);
    pid_t sleeper = std::atoi(text);
    REQUIRE(sleeper > 0);

    REQUIRE(signal_run(launched.pid, SIGKILL, true));
    CHECK(WTERMSIG(wait_for(launched.pid)) == SIGKILL);
    CHECK(WTERMSIG(wait_for(sleeper)) == SIGKILL);
    close_pipes(launched);
}

TEST_CASE("signal_run never signals pid 0 or 1, and tolerates a vanished run") {
    CHECK(!signal_run(0, SIGTERM, true));
    CHECK(!signal_run(1, 0, false));
    CHECK(!signal_run(-5, 0, false));
    auto launched = launch_ok(make_spec({"/bin/true"}));
    wait_for(launched.pid);
    close_pipes(launched);
    CHECK(!signal_run(launched.pid, SIGTERM, true));
    CHECK(!stop_signal(launched.pid, SIGTERM, true));  // ESRCH is not an error
    CHECK(!stop_signal(launched.pid, SIGTSTP, true));
}

}  // namespace pkit::shell::test
