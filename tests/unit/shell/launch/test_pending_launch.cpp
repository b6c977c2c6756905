// Asynchronous launches: start_launch() returns once the child is forked, and
// PendingLaunches learns from the report pipe (or from the reaper, when the child's
// exit comes first) whether it exec'd. Also the open file limit a child gets back.

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <optional>
#include <string>

#include "daemon/shell/io/line_reader.hpp"
#include "daemon/shell/launch/pending_launch.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

using config::LaunchError;

namespace {

struct Outcome {
    std::size_t service = 0;
    std::uint64_t run = 0;
    std::expected<Launched, LaunchFailure> result = std::unexpected(LaunchFailure{});
};

std::string limit_text(rlim_t value) {
    return value == RLIM_INFINITY ? "unlimited" : std::to_string(value);
}

}  // namespace

TEST_CASE("an asynchronous launch returns at once and reports the exec from the loop") {
    TestLoop loop;
    std::vector<Outcome> outcomes;
    int after_loop = 0;
    {
        PendingLaunches pending(
            loop.get(),
            [&](std::size_t service, std::uint64_t run,
                std::expected<Launched, LaunchFailure> result) {
                outcomes.push_back(Outcome{service, run, std::move(result)});
            },
            [&] { ++after_loop; });
        auto spec = make_spec({"/bin/sh", "-c", "echo hello; exit 4"});
        auto started = start_launch(LaunchRequest{&spec, 7, {}});
        REQUIRE(started.has_value());
        pid_t pid = started->pid;
        CHECK(pid > 0);
        pending.add(3, 7, std::move(*started));
        CHECK(outcomes.empty());  // nothing is known before the loop runs
        REQUIRE(loop.run_until([&] { return !outcomes.empty(); }));
        CHECK(after_loop == 1);
        CHECK(pending.size() == 0);
        REQUIRE(outcomes.size() == 1);
        CHECK(outcomes[0].service == 3);
        CHECK(outcomes[0].run == 7);
        REQUIRE(outcomes[0].result.has_value());
        CHECK(outcomes[0].result->pid == pid);

        std::vector<std::string> lines;
        int eofs = 0;
        LineReader out(
            loop.get(), [&](std::string_view line) { lines.emplace_back(line); }, [&] { ++eofs; });
        LineReader err(
            loop.get(), [](std::string_view) {}, [&] { ++eofs; });
        REQUIRE(out.start(outcomes[0].result->stdout_fd).has_value());
        REQUIRE(err.start(outcomes[0].result->stderr_fd).has_value());
        CHECK(loop.run_until([&] { return eofs == 2; }));
        CHECK(lines == std::vector<std::string>{"hello"});
        int status = wait_for(pid);
        CHECK(WEXITSTATUS(status) == 4);
        CHECK_FALSE(pending.on_exit(pid));  // a run's exit: not the launcher's business
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("a failure found before fork comes back from start_launch itself") {
    // A name looked up in PATH and found nowhere: nothing is forked.
    auto missing = make_spec({"pkit-no-such-tool"});
    auto started = start_launch(LaunchRequest{&missing, 1, {}});
    REQUIRE_FALSE(started.has_value());
    CHECK(started.error().kind == LaunchError::not_found);
    CHECK(started.error().message == "not_found: pkit-no-such-tool: No such file or directory");
}

TEST_CASE("an exec failure is reported from the loop with the same text as launch()") {
    TestLoop loop;
    std::vector<Outcome> outcomes;
    {
        PendingLaunches pending(
            loop.get(),
            [&](std::size_t service, std::uint64_t run,
                std::expected<Launched, LaunchFailure> result) {
                outcomes.push_back(Outcome{service, run, std::move(result)});
            },
            [] {});
        auto spec = make_spec({"/nonexistent/pkit-bin"});
        auto started = start_launch(LaunchRequest{&spec, 1, {}});
        REQUIRE(started.has_value());
        pid_t pid = started->pid;
        pending.add(0, 1, std::move(*started));
        REQUIRE(loop.run_until([&] { return !outcomes.empty(); }));
        REQUIRE_FALSE(outcomes[0].result.has_value());
        CHECK(outcomes[0].result.error().kind == LaunchError::not_found);
        CHECK(outcomes[0].result.error().message ==
              "not_found: /nonexistent/pkit-bin: No such file or directory");
        CHECK(WEXITSTATUS(wait_for(pid)) == 127);
        CHECK(pending.on_exit(pid));
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("a child reaped before its report is polled is resolved by on_exit") {
    TestLoop loop;
    std::vector<Outcome> outcomes;
    {
        PendingLaunches pending(
            loop.get(),
            [&](std::size_t service, std::uint64_t run,
                std::expected<Launched, LaunchFailure> result) {
                outcomes.push_back(Outcome{service, run, std::move(result)});
            },
            [] {});

        SUBCASE("a failed exec: the failure is reported and the exit consumed") {
            auto spec = make_spec({"/bin/sh", "-c", "exit 0"});
            spec.process.edit().cwd = "/nonexistent/pkit-dir";
            auto started = start_launch(LaunchRequest{&spec, 2, {}});
            REQUIRE(started.has_value());
            pid_t pid = started->pid;
            pending.add(0, 2, std::move(*started));
            // The reaper wins the race: the child has written its report and exited.
            int status = wait_for(pid);
            CHECK(WEXITSTATUS(status) == 127);
            CHECK(pending.on_exit(pid));
            REQUIRE(outcomes.size() == 1);
            REQUIRE_FALSE(outcomes[0].result.has_value());
            CHECK(outcomes[0].result.error().kind == LaunchError::bad_cwd);
            CHECK(outcomes[0].result.error().message ==
                  "bad_cwd: /nonexistent/pkit-dir: No such file or directory");
        }
        SUBCASE("an exec that succeeded and exited at once: spawned first, then the exit") {
            auto spec = make_spec({"/bin/true"});
            auto started = start_launch(LaunchRequest{&spec, 2, {}});
            REQUIRE(started.has_value());
            pid_t pid = started->pid;
            pending.add(0, 2, std::move(*started));
            wait_for(pid);
            CHECK_FALSE(pending.on_exit(pid));  // the exit goes on to the run
            REQUIRE(outcomes.size() == 1);
            REQUIRE(outcomes[0].result.has_value());
            close(outcomes[0].result->stdout_fd);
            close(outcomes[0].result->stderr_fd);
        }
        SUBCASE("a failure the loop saw first: the later exit is still consumed") {
            auto spec = make_spec({"/bin/sh"});
            spec.process.edit().cwd = "/nonexistent/pkit-dir";
            auto started = start_launch(LaunchRequest{&spec, 2, {}});
            REQUIRE(started.has_value());
            pid_t pid = started->pid;
            pending.add(0, 2, std::move(*started));
            REQUIRE(loop.run_until([&] { return !outcomes.empty(); }));
            CHECK_FALSE(outcomes[0].result.has_value());
            wait_for(pid);
            CHECK(pending.on_exit(pid));
            CHECK_FALSE(pending.on_exit(pid));  // only once
        }
        CHECK(pending.size() == 0);
        uv_run(loop.get(), UV_RUN_NOWAIT);
        CHECK(outcomes.size() == 1);  // never a second outcome
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("resolve_all waits for every launch in flight") {
    TestLoop loop;
    std::vector<Outcome> outcomes;
    {
        PendingLaunches pending(
            loop.get(),
            [&](std::size_t service, std::uint64_t run,
                std::expected<Launched, LaunchFailure> result) {
                outcomes.push_back(Outcome{service, run, std::move(result)});
            },
            [] {});
        auto spec = make_spec({"/bin/sleep", "10"});
        for (std::size_t k = 0; k < 3; ++k) {
            auto started = start_launch(LaunchRequest{&spec, 1, {}});
            REQUIRE(started.has_value());
            pending.add(k, 1, std::move(*started));
        }
        CHECK(pending.resolve_all() == 3);
        CHECK(pending.size() == 0);
        REQUIRE(outcomes.size() == 3);
        for (auto& outcome : outcomes) {
            REQUIRE(outcome.result.has_value());
            close(outcome.result->stdout_fd);
            close(outcome.result->stderr_fd);
            signal_run(outcome.result->pid, SIGKILL, true);
            wait_for(outcome.result->pid);
        }
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("resolve_service waits only for that service's launches, failures included") {
    TestLoop loop;
    std::vector<Outcome> outcomes;
    {
        PendingLaunches pending(
            loop.get(),
            [&](std::size_t service, std::uint64_t run,
                std::expected<Launched, LaunchFailure> result) {
                outcomes.push_back(Outcome{service, run, std::move(result)});
            },
            [] {});
        auto spec = make_spec({"/bin/sleep", "10"});
        for (std::size_t k = 0; k < 3; ++k) {
            auto started = start_launch(LaunchRequest{&spec, 1, {}});
            REQUIRE(started.has_value());
            pending.add(k, 1, std::move(*started));
        }
        pending.add_failed(4, 2, LaunchFailure{LaunchError::not_found, "not_found: x: gone"});
        CHECK(pending.resolve_service(1) == 1);
        REQUIRE(outcomes.size() == 1);
        CHECK(outcomes[0].service == 1);
        CHECK(pending.size() == 3);  // services 0 and 2 in flight, 4's failure held
        CHECK(pending.resolve_service(4) == 1);
        REQUIRE(outcomes.size() == 2);
        CHECK(outcomes[1].service == 4);
        CHECK_FALSE(outcomes[1].result.has_value());
        CHECK(pending.resolve_service(4) == 0);
        CHECK(pending.resolve_all() == 2);
        REQUIRE(outcomes.size() == 4);
        for (auto& outcome : outcomes) {
            if (!outcome.result) {
                continue;
            }
            close(outcome.result->stdout_fd);
            close(outcome.result->stderr_fd);
            signal_run(outcome.result->pid, SIGKILL, true);
            wait_for(outcome.result->pid);
        }
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("pkitd raises its open file limit, and a run gets the original one back") {
    rlimit before{};
    REQUIRE(getrlimit(RLIMIT_NOFILE, &before) == 0);
    if (before.rlim_cur == before.rlim_max && before.rlim_max != RLIM_INFINITY &&
        before.rlim_max > 1024) {
        // Make the raise visible: start below the hard limit, as `ulimit -n 1024` does.
        before.rlim_cur = 1024;
        REQUIRE(setrlimit(RLIMIT_NOFILE, &before) == 0);
    }
    REQUIRE(raise_nofile_limit().has_value());
    rlimit raised{};
    REQUIRE(getrlimit(RLIMIT_NOFILE, &raised) == 0);
    CHECK(raised.rlim_cur == before.rlim_max);

    TestLoop loop;
    auto captured = run_to_end(loop, make_spec({"/bin/sh", "-c", "ulimit -Sn; ulimit -Hn"}));
    CHECK(captured.out ==
          std::vector<std::string>{limit_text(before.rlim_cur), limit_text(before.rlim_max)});
    SUBCASE("the service's own nofile still wins") {
        auto spec = make_spec({"/bin/sh", "-c", "ulimit -Sn"});
        spec.process.edit().rlimits = {config::Rlimit{RLIMIT_NOFILE, "nofile", 200}};
        CHECK(run_to_end(loop, spec).out == std::vector<std::string>{"200"});
    }
    CHECK(loop.close() == 0);
    setrlimit(RLIMIT_NOFILE, &before);
}

}  // namespace pkit::shell::test
