// Reaper: every child is reaped through waitpid(-1), including orphans that come to
// pkitd as a subreaper and that it never started; the children expected to have ended
// are waited for by pid; a turn reaps within a time budget and a scan at most a batch.

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include "daemon/shell/uv_handle.hpp"

#include "daemon/shell/io/line_reader.hpp"
#include "daemon/shell/launch/launcher.hpp"
#include "daemon/shell/launch/reaper.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

namespace {

// A turn's reaping with all the time it wants: the cases that count what one call
// reaps must not depend on how fast a loaded machine gets through it.
constexpr std::uint64_t k_untimed_ns = 3'600'000'000'000;

// Starts `/bin/true` and waits until it has exited, without reaping it.
pid_t exited_child() {
    static const auto spec = make_spec({"/bin/true"});
    auto launched = launch(LaunchRequest{&spec, 1, {}});
    REQUIRE(launched.has_value());
    close(launched->stdout_fd);
    close(launched->stderr_fd);
    siginfo_t info{};
    REQUIRE(waitid(P_PID, static_cast<id_t>(launched->pid), &info, WEXITED | WNOWAIT) == 0);
    return launched->pid;
}

}  // namespace

TEST_CASE("as a subreaper, the reaper reaps a double-forked grandchild and reports its pid") {
    REQUIRE(become_subreaper_unless_pid1().has_value());
    TestLoop loop;
    std::map<pid_t, int> reaped;
    {
        Reaper reaper(loop.get(), [&](pid_t pid, int status) { reaped[pid] = status; });
        REQUIRE(reaper.start().has_value());

        // The shell prints the pid of a background child and exits at once, orphaning it.
        auto spec = make_spec({"/bin/sh", "-c", "sleep 0.2 >/dev/null 2>&1 & echo $!; exit 7"});
        auto launched = launch(LaunchRequest{&spec, 1, {}});
        REQUIRE(launched.has_value());
        pid_t grandchild = -1;
        LineReader out(
            loop.get(), [&](std::string_view line) { grandchild = std::atoi(line.data()); }, [] {});
        LineReader err(
            loop.get(), [](std::string_view) {}, [] {});
        REQUIRE(out.start(launched->stdout_fd).has_value());
        REQUIRE(err.start(launched->stderr_fd).has_value());

        CHECK(loop.run_until([&] {
            return reaped.contains(launched->pid) && grandchild > 0 && reaped.contains(grandchild);
        }));
        CHECK(WEXITSTATUS(reaped[launched->pid]) == 7);
        CHECK(WIFEXITED(reaped[grandchild]));
        CHECK(WEXITSTATUS(reaped[grandchild]) == 0);
        CHECK(reaped.size() == 2);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("reap_now drains children that exited before anything watched SIGCHLD") {
    TestLoop loop;
    std::vector<pid_t> started;
    auto spec = make_spec({"/bin/sh", "-c", "exit 0"});
    for (int i = 0; i < 3; ++i) {
        auto launched = launch(LaunchRequest{&spec, 1, {}});
        REQUIRE(launched.has_value());
        close(launched->stdout_fd);
        close(launched->stderr_fd);
        started.push_back(launched->pid);
        // Wait for the exit without reaping it.
        siginfo_t info{};
        REQUIRE(waitid(P_PID, static_cast<id_t>(launched->pid), &info, WEXITED | WNOWAIT) == 0);
    }
    std::vector<pid_t> reaped;
    Reaper reaper(loop.get(), [&](pid_t pid, int) { reaped.push_back(pid); });
    CHECK(reaper.reap_now() == 3);
    std::sort(reaped.begin(), reaped.end());
    std::sort(started.begin(), started.end());
    CHECK(reaped == started);
    CHECK(reaper.reap_now() == 0);  // ECHILD: nothing left, and no blocking
}

TEST_CASE("a batch reaps at most its size, the rest at the next turns without a SIGCHLD") {
    TestLoop loop;
    std::set<pid_t> started;
    for (int i = 0; i < 5; ++i) {
        started.insert(exited_child());
    }
    std::set<pid_t> reaped;
    {
        // Not started: no SIGCHLD is watched, only the continuation can reap.
        Reaper reaper(loop.get(), [&](pid_t pid, int) { reaped.insert(pid); }, 2,
                      {.budget_ns = k_untimed_ns});
        CHECK(reaper.reap_batch() == 2);
        CHECK(reaper.continuing());
        uv_run(loop.get(), UV_RUN_NOWAIT);
        CHECK(reaped.size() == 4);
        CHECK(reaper.continuing());
        uv_run(loop.get(), UV_RUN_NOWAIT);
        CHECK(reaped == started);
        CHECK(!reaper.continuing());  // the last batch was not full
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("children exiting as fast as they are reaped leave the loop its timers") {
    // The worst case of a crash loop: each reaped child is replaced at once by one that
    // has already exited when the callback returns, so there is always one to reap.
    TestLoop loop;
    constexpr int k_storm = 60;
    int reaped = 0;
    int ticks = 0;
    int ticks_at_first = -1;
    int ticks_at_last = -1;
    {
        Timer ticker(loop.get());
        ticker.start(
            0, [&] { ++ticks; }, 1);
        Reaper reaper(
            loop.get(),
            [&](pid_t, int) {
                if (ticks_at_first < 0) {
                    ticks_at_first = ticks;
                }
                ticks_at_last = ticks;
                if (++reaped < k_storm) {
                    exited_child();
                }
            },
            4);
        REQUIRE(reaper.start().has_value());
        exited_child();
        CHECK(loop.run_until([&] { return reaped >= k_storm && !reaper.continuing(); }));
    }
    // Unbounded, the whole storm would have been reaped inside one callback, with no
    // timer in between.
    CHECK(ticks_at_last > ticks_at_first);
    CHECK(loop.close() == 0);
}

TEST_CASE("an expected child is waited for by its pid while scans are put off") {
    TestLoop loop;
    std::map<pid_t, int> reaped;
    {
        // Not started (nothing watches SIGCHLD); a scan puts the next off for good.
        Reaper reaper(loop.get(), [&](pid_t pid, int status) { reaped[pid] = status; },
                      Reaper::k_default_batch, {.cheap_ns = 0, .put_off_factor = 1'000'000'000});
        CHECK(reaper.reap_batch() == 0);  // a scan: the next is put off
        const pid_t unexpected = exited_child();
        CHECK(reaper.reap_batch() == 0);  // put off: nothing reaped
        const pid_t pid = exited_child();
        reaper.expect(pid);
        reaper.expect(pid);               // both pipes of a run say so: one reap
        CHECK(reaper.reap_batch() == 1);  // the scan is still put off
        CHECK(reaped.size() == 1);
        CHECK(WIFEXITED(reaped[pid]));
        // While scans are put off, an expected child is waited for at the next turn.
        const pid_t later = exited_child();
        reaper.expect(later);
        uv_run(loop.get(), UV_RUN_NOWAIT);
        CHECK(reaped.contains(later));
        CHECK_FALSE(reaped.contains(unexpected));  // left to the scan, still put off
        CHECK(reaper.reap_now() == 1);             // reap_now does not wait
        CHECK(reaped.contains(unexpected));
        reaped.erase(later);
        reaped.erase(unexpected);
        // Reaped by a scan first, an expected pid is dropped (ECHILD), not reported twice.
        const pid_t other = exited_child();
        CHECK(reaper.reap_now() == 1);
        reaper.expect(other);
        uv_run(loop.get(), UV_RUN_NOWAIT);
        CHECK(reaped.size() == 2);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("expected children are reaped while the turn's budget lasts, not a batch of them") {
    // In a mass stop the runs end faster than a batch a turn: each is reaped as its pipes
    // end, and none is left in a backlog for after the last one.
    TestLoop loop;
    std::set<pid_t> reaped;
    {
        // A batch of 1 for the scans, and all the time wanted for the waits by pid.
        Reaper reaper(loop.get(), [&](pid_t pid, int) { reaped.insert(pid); }, 1,
                      {.budget_ns = k_untimed_ns});
        std::set<pid_t> expected;
        for (int i = 0; i < 5; ++i) {
            const pid_t pid = exited_child();
            expected.insert(pid);
            reaper.expect(pid);
        }
        CHECK(reaper.reap_batch() == 5);
        CHECK(reaped == expected);
        CHECK(reaper.expected() == 0);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("when the turn's budget is spent, the expected children left wait for the next turn") {
    TestLoop loop;
    std::set<pid_t> reaped;
    {
        // No budget: each turn reaps one child, at least, and goes on at the next turn.
        Reaper reaper(loop.get(), [&](pid_t pid, int) { reaped.insert(pid); },
                      Reaper::k_default_batch, {.budget_ns = 0});
        std::set<pid_t> expected;
        for (int i = 0; i < 3; ++i) {
            const pid_t pid = exited_child();
            expected.insert(pid);
            reaper.expect(pid);
        }
        CHECK(reaper.reap_batch() == 1);
        CHECK(reaper.continuing());
        CHECK(reaper.expected() == 2);
        uv_run(loop.get(), UV_RUN_NOWAIT);
        CHECK(reaped.size() == 2);
        uv_run(loop.get(), UV_RUN_NOWAIT);
        CHECK(reaped == expected);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("a costly scan that found children is put off while others are reaped by pid") {
    // In a mass stop a scan mostly finds runs whose pipes' end the loop has not read yet,
    // after a look at every child older than them: the waits by pid reap those anyway.
    TestLoop loop;
    std::set<pid_t> reaped;
    {
        // Not started (nothing watches SIGCHLD); every scan counts as costly.
        Reaper reaper(loop.get(), [&](pid_t pid, int) { reaped.insert(pid); },
                      Reaper::k_default_batch,
                      {.budget_ns = k_untimed_ns, .cheap_ns = 0, .put_off_factor = 1'000'000'000});
        const pid_t by_pid = exited_child();
        const pid_t unexpected = exited_child();
        reaper.expect(by_pid);
        CHECK(reaper.reap_batch() == 2);  // one by pid, one by the scan
        CHECK(reaped == std::set<pid_t>{by_pid, unexpected});
        const pid_t later = exited_child();
        CHECK(reaper.reap_batch() == 0);  // the scan is put off
        CHECK_FALSE(reaped.contains(later));
        CHECK(reaper.reap_now() == 1);  // reap_now does not wait
        CHECK(reaped.contains(later));
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("a child that lives on after it was expected is left to the scans after its tries") {
    // A run that closed its output and goes on running must not cost a waitpid at
    // every SIGCHLD for as long as it lives.
    TestLoop loop;
    std::set<pid_t> reaped;
    {
        Reaper reaper(loop.get(), [&](pid_t pid, int) { reaped.insert(pid); });
        REQUIRE(reaper.start().has_value());
        int gate[2];
        REQUIRE(pipe(gate) == 0);
        const pid_t pid = fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            close(gate[1]);
            char byte = 0;
            (void)!read(gate[0], &byte, 1);  // until the test closes the gate
            _exit(0);
        }
        close(gate[0]);
        reaper.expect(pid);
        for (int k = 0; k < Reaper::k_expect_tries; ++k) {
            CHECK(reaper.expected() == 1);
            reaper.reap_batch();
        }
        CHECK(reaper.expected() == 0);
        CHECK(reaped.empty());
        close(gate[1]);  // it ends now: its SIGCHLD brings a scan
        CHECK(loop.run_until([&] { return reaped.contains(pid); }));
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("a scan that found children while nothing was reaped by pid puts nothing off") {
    // Children whose pipes never end (a leftover of their group holds them) have only
    // the scan: one that reaps them must not hold back the next.
    TestLoop loop;
    std::set<pid_t> reaped;
    {
        Reaper reaper(loop.get(), [&](pid_t pid, int) { reaped.insert(pid); },
                      Reaper::k_default_batch, {.cheap_ns = 0, .put_off_factor = 1'000'000'000});
        for (int round = 0; round < 3; ++round) {
            const pid_t pid = exited_child();
            CHECK(reaper.reap_batch() == 1);
            CHECK(reaped.contains(pid));
        }
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("a scan put off because scans are costly still comes, and reaps every child") {
    TestLoop loop;
    std::set<pid_t> reaped;
    {
        // Every scan counts as costly: each puts the next off by nine times its cost.
        Reaper reaper(loop.get(), [&](pid_t pid, int) { reaped.insert(pid); },
                      Reaper::k_default_batch, {.cheap_ns = 0});
        REQUIRE(reaper.start().has_value());
        std::set<pid_t> started;
        for (int round = 0; round < 5; ++round) {
            started.insert(exited_child());
            reaper.reap_batch();  // the scan may be put off: a timer brings it
        }
        CHECK(loop.run_until([&] { return reaped == started; }));
    }
    CHECK(loop.close() == 0);
}

}  // namespace pkit::shell::test
