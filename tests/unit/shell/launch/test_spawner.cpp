// The spawner thread: prepared launches cloned off the loop, outcomes back through a
// uv_async; a child may be reaped before its outcome is taken; a
// credential change in a child sharing pkitd's memory touches only the child.

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "daemon/shell/launch/spawner.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

using config::LaunchError;

namespace {

std::unique_ptr<PreparedLaunch> prepared(const config::ServiceSpec& spec) {
    auto result = prepare_launch(LaunchRequest{&spec, 1, {}});
    REQUIRE(result.has_value());
    return std::move(*result);
}

void close_started(StartedLaunch& started) {
    close_fds({started.stdout_fd, started.stderr_fd, started.report_fd});
    started.stdout_fd = started.stderr_fd = started.report_fd = -1;
}

// The Uid: lines of every thread of this process.
std::vector<std::string> thread_uids() {
    std::vector<std::string> uids;
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
        std::ifstream status(task.path() / "status");
        for (std::string line; std::getline(status, line);) {
            if (line.starts_with("Uid:")) {
                uids.push_back(line);
            }
        }
    }
    return uids;
}

}  // namespace

TEST_CASE("the spawner clones prepared launches off the loop and reports each one once") {
    TestLoop loop;
    int ready = 0;
    {
        Spawner spawner(loop.get(), [&] { ++ready; });
        REQUIRE(spawner.start().has_value());
        auto ok = make_spec({"/bin/sh", "-c", "exit 0"});
        auto bad_cwd = make_spec({"/bin/sh", "-c", "exit 0"});
        bad_cwd.process.edit().cwd = "/nonexistent/pkit-dir";
        spawner.submit(3, 7, prepared(ok));
        spawner.submit(4, 8, prepared(bad_cwd));
        spawner.submit(5, 9, prepared(ok));
        CHECK(spawner.busy());

        std::vector<Spawner::Outcome> outcomes;
        REQUIRE(loop.run_until([&] {
            for (auto& o : spawner.take()) {
                outcomes.push_back(std::move(o));
            }
            return outcomes.size() == 3;
        }));
        CHECK(ready >= 1);
        CHECK_FALSE(spawner.busy());
        std::vector<std::size_t> services;
        for (auto& o : outcomes) {
            services.push_back(o.service);
            REQUIRE(o.started.has_value());
            CHECK(o.started->pid > 0);
            // The clone returned once the child had exec'd or failed. The report's end of
            // file may still be a moment away: the kernel releases a vfork parent before it
            // closes the child's close-on-exec fds, so this read waits for it.
            auto report = read_launch_report(*o.started, true);
            REQUIRE(report.has_value());
            if (o.service == 4) {
                REQUIRE_FALSE(report->has_value());
                CHECK(report->error().kind == LaunchError::bad_cwd);
            } else {
                CHECK(report->has_value());
            }
            wait_for(o.started->pid);
            close_started(*o.started);
        }
        std::sort(services.begin(), services.end());  // a pool may finish out of order
        CHECK(services == std::vector<std::size_t>{3, 4, 5});
        for (auto& o : outcomes) {
            CHECK(o.run == o.service + 4);
        }
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("a spawned child can be reaped before its outcome is taken") {
    TestLoop loop;
    {
        Spawner spawner(loop.get(), [] {});
        REQUIRE(spawner.start().has_value());
        auto spec = make_spec({"/bin/true"});
        spawner.submit(0, 1, prepared(spec));
        spawner.wait_all();
        CHECK(spawner.busy());  // finished, not taken
        // What the daemon's reaper may do first: the pid is not known to it yet.
        int status = 0;
        pid_t reaped = -1;
        while ((reaped = waitpid(-1, &status, 0)) < 0 && errno == EINTR) {
        }
        REQUIRE(reaped > 0);
        CHECK(WIFEXITED(status));
        auto outcomes = spawner.take();
        REQUIRE(outcomes.size() == 1);
        REQUIRE(outcomes[0].started.has_value());
        CHECK(outcomes[0].started->pid == reaped);
        CHECK_FALSE(spawner.busy());
        close_started(*outcomes[0].started);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("wait_service waits for that service's jobs, and a stopped spawner drops its queue") {
    TestLoop loop;
    std::vector<pid_t> pids;
    {
        Spawner spawner(loop.get(), [] {});
        REQUIRE(spawner.start().has_value());
        auto spec = make_spec({"/bin/true"});
        for (std::size_t i = 0; i < 5; ++i) {
            spawner.submit(i, 1, prepared(spec));
        }
        spawner.wait_service(2);
        auto outcomes = spawner.take();
        // Jobs are taken in submission order: 0, 1 and 2 at least are done.
        std::set<std::size_t> services;
        for (auto& o : outcomes) {
            services.insert(o.service);
        }
        CHECK(services.contains(0));
        CHECK(services.contains(1));
        CHECK(services.contains(2));
        for (auto& o : outcomes) {
            REQUIRE(o.started.has_value());
            pids.push_back(o.started->pid);
            close_started(*o.started);
        }
        for (std::size_t i = 5; i < 50; ++i) {
            spawner.submit(i, 1, prepared(spec));
        }
        // The destructor joins the thread, whatever is still queued.
    }
    for (pid_t pid : pids) {
        wait_for(pid);
    }
    // The children of jobs finished before the stop are left to the reaper.
    while (waitpid(-1, nullptr, 0) > 0 || errno == EINTR) {
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("a credential change in a child cloned by the spawner touches only the child (root)") {
    if (geteuid() != 0) {
        MESSAGE("skipped: needs root to change credentials");
        return;
    }
    TestLoop loop;
    {
        Spawner spawner(loop.get(), [] {});
        REQUIRE(spawner.start().has_value());
        auto spec = make_spec({"/bin/sh", "-c", "id -u; id -g"});
        spec.process.edit().user.id = 4321;
        spec.process.edit().group.id = 4322;
        spawner.submit(0, 1, prepared(spec));
        spawner.wait_all();
        auto outcomes = spawner.take();
        REQUIRE(outcomes.size() == 1);
        REQUIRE(outcomes[0].started.has_value());
        StartedLaunch& started = *outcomes[0].started;
        auto report = read_launch_report(started, true);
        REQUIRE(report.has_value());
        CHECK(report->has_value());
        std::string out;
        char buffer[256];
        for (;;) {
            ssize_t n = read(started.stdout_fd, buffer, sizeof buffer);
            if (n > 0) {
                out.append(buffer, static_cast<std::size_t>(n));
            } else if (n == 0 || errno != EAGAIN) {
                break;
            } else {
                usleep(1000);  // the pipe is non-blocking; the child is still writing
            }
        }
        CHECK(out == "4321\n4322\n");
        wait_for(started.pid);
        close_started(started);
        // Every thread of this process (the spawner's included) still runs as root.
        for (const std::string& uid : thread_uids()) {
            CHECK(uid.find("4321") == std::string::npos);
        }
        CHECK(getuid() == 0);
        CHECK(geteuid() == 0);
    }
    CHECK(loop.close() == 0);
}

}  // namespace pkit::shell::test
