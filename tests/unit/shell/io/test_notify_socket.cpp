// NotifySocket: the sd_notify fields pkit acts on, the credential rule (the run's
// group, or a sender already gone), descriptors closed at once, and the real
// systemd-notify.

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>

#include "daemon/shell/io/notify_socket.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

namespace {

// Sends one datagram to `path` from the calling process, with `fds` attached.
bool send_notify(const std::string& path, const std::string& text,
                 const std::vector<int>& fds = {}) {
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return false;
    }
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
    iovec iov{const_cast<char*>(text.data()), text.size()};
    msghdr header{};
    header.msg_name = &address;
    header.msg_namelen = sizeof address;
    header.msg_iov = &iov;
    header.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 8)] = {};
    if (!fds.empty()) {
        header.msg_control = control;
        header.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
        cmsghdr* cmsg = CMSG_FIRSTHDR(&header);
        cmsg->cmsg_level = SOL_SOCKET;
        cmsg->cmsg_type = SCM_RIGHTS;
        cmsg->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
        std::memcpy(CMSG_DATA(cmsg), fds.data(), sizeof(int) * fds.size());
    }
    bool sent = sendmsg(fd, &header, 0) == static_cast<ssize_t>(text.size());
    close(fd);
    return sent;
}

// A child that sends `text` (from its own process group when `own_group`, as a run's
// process would) and then stays alive until killed, so its credentials are checked
// against a live process. Only async-signal-safe calls after fork.
pid_t fork_sender(const std::string& path, const std::string& text, bool own_group) {
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        if (own_group) {
            setpgid(0, 0);
        }
        int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::memcpy(address.sun_path, path.c_str(), path.size());
        sendto(fd, text.data(), text.size(), 0, reinterpret_cast<sockaddr*>(&address),
               sizeof address);
        for (;;) {
            pause();
        }
    }
    if (own_group) {
        setpgid(pid, pid);  // also here: the parent must not race the child's setpgid
    }
    return pid;
}

void end_child(pid_t pid) {
    kill(pid, SIGKILL);
    wait_for(pid);
}

// A NotifySocket in `dir` that collects the messages it accepts.
struct Collector {
    Collector(TestLoop& loop, const std::string& path, std::optional<uid_t> owner = {}) {
        auto opened = NotifySocket::open(
            loop.get(), path, [this](const NotifyMessage& message) { messages.push_back(message); },
            owner);
        REQUIRE_MESSAGE(opened.has_value(), (opened ? "" : opened.error()));
        socket = std::move(*opened);
    }
    std::vector<NotifyMessage> messages;
    std::unique_ptr<NotifySocket> socket;
};

// Runs the loop for `ms` more, so that a message that should be dropped has every
// chance to be (wrongly) delivered.
void settle(TestLoop& loop, int ms = 50) {
    Timer timer(loop.get());
    bool done = false;
    timer.start(ms, [&] { done = true; });
    loop.run_until([&] { return done; });
}

}  // namespace

TEST_CASE("sd_notify fields: READY, STATUS, WATCHDOG, EXTEND_TIMEOUT_USEC; others ignored") {
    auto message = parse_notify_message(
        "READY=1\nSTATUS=Serving 3 clients\nWATCHDOG=1\nEXTEND_TIMEOUT_USEC=5000000\nMAINPID=7\n");
    CHECK(message.ready);
    CHECK(message.status == "Serving 3 clients");
    CHECK(message.watchdog);
    CHECK(message.extend_timeout_usec == 5000000u);

    CHECK(parse_notify_message("STOPPING=1\nMAINPID=42").empty());
    CHECK(parse_notify_message("BARRIER=1").empty());
    CHECK(parse_notify_message("READY=0\nWATCHDOG=trigger\nEXTEND_TIMEOUT_USEC=soon").empty());
    CHECK(parse_notify_message("STATUS=").status == "");
    CHECK(parse_notify_message("STATUS=a=b\nSTATUS=last").status == "last");
    CHECK(parse_notify_message("garbage\n\nREADY=1").ready);
}

TEST_CASE("notify: messages from a process of the run's group are delivered") {
    TestLoop loop;
    TempDir dir;
    std::string path = dir.path() + "/notify/run-1.sock";  // parent created on demand
    mode_t saved_umask = umask(077);                       // the directory gets 0755 all the same
    {
        Collector collector(loop, path);
        umask(saved_umask);
        CHECK(collector.socket->path() == path);
        struct stat info {};
        REQUIRE(stat(path.c_str(), &info) == 0);
        CHECK(S_ISSOCK(info.st_mode));
        CHECK((info.st_mode & 0777) == 0600);
        CHECK(info.st_uid == geteuid());
        REQUIRE(stat((dir.path() + "/notify").c_str(), &info) == 0);
        CHECK((info.st_mode & 0777) == 0755);

        pid_t ready = fork_sender(path, "READY=1\nSTATUS=up", true);
        collector.socket->set_run_pgid(ready);
        REQUIRE(loop.run_until([&] { return collector.messages.size() == 1; }, 5s));
        CHECK(collector.messages[0].ready);
        CHECK(collector.messages[0].status == "up");

        // A second process of the same group (forked by the run) may speak too.
        pid_t helper = fork();
        REQUIRE(helper >= 0);
        if (helper == 0) {
            setpgid(0, ready);
            send_notify(path, "WATCHDOG=1\nEXTEND_TIMEOUT_USEC=2500000");
            for (;;) {
                pause();
            }
        }
        setpgid(helper, ready);
        REQUIRE(loop.run_until([&] { return collector.messages.size() == 2; }, 5s));
        CHECK(collector.messages[1].watchdog);
        CHECK(collector.messages[1].extend_timeout_usec == 2500000u);
        CHECK_FALSE(collector.messages[1].ready);
        CHECK(collector.socket->ignored() == 0);
        end_child(helper);
        end_child(ready);
    }
    CHECK(access(path.c_str(), F_OK) != 0);  // removed with the socket
    CHECK(loop.close() == 0);
}

TEST_CASE("notify: a live process outside the run's group is ignored, a gone sender is not") {
    TestLoop loop;
    TempDir dir;
    std::string path = dir.write("run.sock", "an old file is replaced");
    {
        Collector collector(loop, path);
        pid_t run = fork_sender(path, "STATUS=from the run", true);
        collector.socket->set_run_pgid(run);
        REQUIRE(loop.run_until([&] { return collector.messages.size() == 1; }, 5s));

        // This test process is alive and in another group.
        REQUIRE(send_notify(path, "READY=1"));
        REQUIRE(loop.run_until([&] { return collector.socket->ignored() == 1; }, 5s));
        settle(loop);
        CHECK(collector.messages.size() == 1);

        // systemd-notify --no-block: the sender has exited (and been reaped) by the time
        // the message is read.
        pid_t gone = fork();
        REQUIRE(gone >= 0);
        if (gone == 0) {
            send_notify(path, "READY=1");
            _exit(0);
        }
        wait_for(gone);
        REQUIRE(loop.run_until([&] { return collector.messages.size() == 2; }, 5s));
        CHECK(collector.messages[1].ready);
        CHECK(collector.socket->ignored() == 1);
        end_child(run);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("notify: descriptors passed with a message are closed at once, even when ignored") {
    TestLoop loop;
    TempDir dir;
    std::string path = dir.path() + "/run.sock";
    {
        Collector collector(loop, path);
        collector.socket->set_run_pgid(getpgrp());
        for (bool accepted : {true, false}) {
            CAPTURE(accepted);
            if (!accepted) {
                collector.socket->set_run_pgid(getpid() + 1);  // not ours
            }
            int barrier[2];
            REQUIRE(pipe2(barrier, O_CLOEXEC) == 0);
            std::size_t before = collector.messages.size();
            REQUIRE(send_notify(path, "BARRIER=1\nSTATUS=x", {barrier[1], barrier[1]}));
            close(barrier[1]);
            REQUIRE(loop.run_until(
                [&] {
                    return collector.messages.size() > before || collector.socket->ignored() > 0;
                },
                5s));
            pollfd hangup{barrier[0], POLLIN, 0};
            CHECK(poll(&hangup, 1, 2000) == 1);
            CHECK((hangup.revents & POLLHUP) != 0);
            char byte;
            CHECK(read(barrier[0], &byte, 1) == 0);
            close(barrier[0]);
        }
        CHECK(collector.messages.size() == 1);
        CHECK(collector.socket->ignored() == 1);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("notify: a 4 KiB message is read whole, a longer one is dropped") {
    TestLoop loop;
    TempDir dir;
    std::string path = dir.path() + "/run.sock";
    {
        Collector collector(loop, path);
        collector.socket->set_run_pgid(getpgrp());
        std::string status(4096 - 7, 's');
        REQUIRE(send_notify(path, "STATUS=" + status));
        REQUIRE(loop.run_until([&] { return collector.messages.size() == 1; }, 5s));
        CHECK(collector.messages[0].status == status);
        REQUIRE(send_notify(path, "STATUS=" + std::string(8000, 'x')));
        REQUIRE(loop.run_until([&] { return collector.socket->ignored() == 1; }, 5s));
        CHECK(collector.messages.size() == 1);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("notify: the socket belongs to the run's user, who can send to it") {
    if (geteuid() != 0) {
        MESSAGE("skipped: needs root to hand the socket to another user");
        return;
    }
    TestLoop loop;
    TempDir dir;
    REQUIRE(chmod(dir.path().c_str(), 0755) == 0);
    std::string path = dir.path() + "/run.sock";
    const uid_t nobody = 65534;
    {
        Collector collector(loop, path, nobody);
        struct stat info {};
        REQUIRE(stat(path.c_str(), &info) == 0);
        CHECK(info.st_uid == nobody);
        CHECK((info.st_mode & 0777) == 0600);
        pid_t child = fork();
        REQUIRE(child >= 0);
        if (child == 0) {
            setpgid(0, 0);
            if (setgid(nobody) != 0 || setuid(nobody) != 0) {
                _exit(2);
            }
            _exit(send_notify(path, "READY=1") ? 0 : 1);
        }
        setpgid(child, child);
        collector.socket->set_run_pgid(child);
        int status = wait_for(child);
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 0);
        REQUIRE(loop.run_until([&] { return collector.messages.size() == 1; }, 5s));
        CHECK(collector.messages[0].ready);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("notify: the real systemd-notify --ready, with and without --status") {
    if (access("/usr/bin/systemd-notify", X_OK) != 0) {
        MESSAGE("skipped: /usr/bin/systemd-notify is missing");
        return;
    }
    TestLoop loop;
    TempDir dir;
    std::string path = dir.path() + "/run.sock";
    {
        Collector collector(loop, path);
        // Called from the run's shell, as services do: as root, systemd-notify sends
        // with its parent's pid in the credentials (the service's main process).
        for (std::string options : {"--ready", "--ready --status=hi"}) {
            collector.messages.clear();
            auto spec =
                make_spec({"/bin/sh", "-c", "/usr/bin/systemd-notify " + options + "; exit $?"});
            auto started = std::chrono::steady_clock::now();
            auto launched = launch(LaunchRequest{&spec, 1, {{"NOTIFY_SOCKET", path}}});
            REQUIRE(launched.has_value());
            close(launched->stdout_fd);
            close(launched->stderr_fd);
            collector.socket->set_run_pgid(launched->pid);
            // It sends READY=1, then BARRIER=1 with a descriptor, and waits until that
            // is closed before exiting cleanly: the loop must keep running meanwhile.
            int status = 0;
            bool exited = false;
            REQUIRE(loop.run_until(
                [&] {
                    exited = exited || waitpid(launched->pid, &status, WNOHANG) == launched->pid;
                    return exited;
                },
                10s));
            CHECK(WIFEXITED(status));
            CHECK(WEXITSTATUS(status) == 0);
            CHECK(std::chrono::steady_clock::now() - started < 3s);
            REQUIRE(collector.messages.size() == 1);
            CHECK(collector.messages[0].ready);
            if (options.ends_with("hi")) {
                CHECK(collector.messages[0].status == "hi");
            } else {
                CHECK_FALSE(collector.messages[0].status);
            }
        }
        CHECK(collector.socket->ignored() == 0);
    }
    CHECK(loop.close() == 0);
}

}  // namespace pkit::shell::test
