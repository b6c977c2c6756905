// RunNotify (runs/run_notify.hpp): a socket per current run that wants one, next to the
// control socket, taking messages only from the run's process group once it is cloned,
// each handed on with the run it was opened for; the next run's open, a failed launch
// and the current run's exit close it, a replaced run's exit does not; it never claims
// an exit.

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "daemon/shell/runs/run_notify.hpp"
#include "tests/unit/core/fake.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

namespace {

// One datagram from this process to the socket at `path`.
bool send_run_datagram(const std::string& path, const std::string& text) {
    int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return false;
    }
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
    bool sent = ::sendto(fd, text.data(), text.size(), 0, reinterpret_cast<sockaddr*>(&address),
                         sizeof address) == static_cast<ssize_t>(text.size());
    ::close(fd);
    return sent;
}

struct Heard {
    std::size_t service;
    std::uint64_t run;
    bool ready;
    std::string status;
};

config::ServiceSpec notifying(std::string name) {
    config::ServiceSpec spec = core::test::spec(std::move(name));
    spec.ready.edit().notify = true;
    return spec;
}

// A few turns of the loop, no waiting: datagrams already sent are read by then.
void spin(TestLoop& loop) {
    for (int turn = 0; turn < 3; ++turn) {
        uv_run(loop.get(), UV_RUN_NOWAIT);
    }
}

}  // namespace

TEST_CASE("a run's notify socket takes its group's messages once cloned, for that run") {
    TempDir dir;
    TestLoop loop;
    std::vector<Heard> heard;
    {
        core::Supervisor sup =
            core::test::supervisor({notifying("web"), core::test::spec("plain")});
        const std::size_t web = *sup.find("web");
        const std::size_t plain = *sup.find("plain");
        RunNotify notify(
            loop.get(), sup, dir.path() + "/pkitd.sock",
            [&](std::size_t service, std::uint64_t run, const NotifyMessage& m) {
                heard.push_back({service, run, m.ready, m.status.value_or("")});
            },
            [](std::string_view, const std::string&) {});

        CHECK_FALSE(notify.open(plain, 1));  // no ready.notify: no socket
        CHECK_FALSE(notify.holds(plain));

        auto path = notify.open(web, 3);
        REQUIRE(path);
        CHECK(*path == dir.path() + "/notify/web.3.sock");
        CHECK(std::filesystem::exists(*path));
        CHECK(notify.holds(web));

        // Before the clone the run's group is unknown: a live sender is not the run.
        REQUIRE(send_run_datagram(*path, "STATUS=too early"));
        spin(loop);
        CHECK(heard.empty());

        notify.cloned(web, ::getpgrp());  // this process stands for the run's group
        REQUIRE(send_run_datagram(*path, "READY=1\nSTATUS=serving"));
        REQUIRE(loop.run_until([&] { return !heard.empty(); }, 5s));
        REQUIRE(heard.size() == 1);
        CHECK(heard[0].service == web);
        CHECK(heard[0].run == 3);
        CHECK(heard[0].ready);
        CHECK(heard[0].status == "serving");

        // The next run's socket replaces it: the old run's path is gone.
        auto next = notify.open(web, 4);
        REQUIRE(next);
        CHECK(*next == dir.path() + "/notify/web.4.sock");
        CHECK_FALSE(std::filesystem::exists(*path));
        // Its launch failed: the socket goes.
        notify.close(web);
        CHECK_FALSE(notify.holds(web));
        CHECK_FALSE(std::filesystem::exists(*next));
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("the current run's exit closes its notify socket, a replaced run's does not") {
    TempDir dir;
    TestLoop loop;
    {
        core::Supervisor sup = core::test::supervisor({notifying("web")});
        sup.start(core::test::at(0));
        sup.take_actions();
        sup.on_spawned(0, 1, 4242, core::test::at(0.1));
        sup.take_actions();
        RunNotify notify(
            loop.get(), sup, dir.path() + "/pkitd.sock",
            [](std::size_t, std::uint64_t, const NotifyMessage&) {},
            [](std::string_view, const std::string&) {});
        REQUIRE(notify.open(0, 1));

        // A run a start_first restart replaced (its pid is not the current one), and a
        // pid of no run: the socket is the current run's, it stays.
        ChildExit replaced{777, 0, 0, nullptr, {}};
        CHECK_FALSE(notify.on_child_exit(replaced));
        CHECK(notify.holds(0));
        ChildExit orphan{888, 0, std::nullopt, nullptr, {}};
        CHECK_FALSE(notify.on_child_exit(orphan));
        CHECK(notify.holds(0));

        ChildExit current{4242, 0, 0, nullptr, {}};
        CHECK_FALSE(notify.on_child_exit(current));  // never claimed: the core needs it
        CHECK_FALSE(notify.holds(0));
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("a notify socket that cannot be opened is logged and the run goes without") {
    TempDir dir;
    TestLoop loop;
    std::vector<std::string> warnings;
    {
        // A path longer than sun_path holds.
        const std::string deep = dir.path() + "/" + std::string(120, 'd');
        core::Supervisor sup = core::test::supervisor({notifying("web")});
        RunNotify notify(
            loop.get(), sup, deep + "/pkitd.sock",
            [](std::size_t, std::uint64_t, const NotifyMessage&) {},
            [&](std::string_view level, const std::string& m) {
                warnings.push_back(std::string(level) + ": " + m);
            });
        CHECK_FALSE(notify.open(0, 1));
        CHECK_FALSE(notify.holds(0));
        REQUIRE(warnings.size() == 1);
        CHECK(warnings[0].starts_with("warning: web: cannot open its sd_notify socket: "));
    }
    CHECK(loop.close() == 0);
}

}  // namespace pkit::shell::test
