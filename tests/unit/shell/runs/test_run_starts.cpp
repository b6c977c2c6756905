// RunStarts (runs/run_starts.hpp): the core's SpawnActions queued and started in order,
// at most a turn's budget at a time; none from inside the reaping; a launch that cannot
// be prepared reported at the next turn, never from inside the spawn; resolve() waiting
// for every launch in flight; and a failed launch's child claimed once, as never a run.
// Real launches of /bin/sh on the Spawner's thread, a real loop.

#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "daemon/shell/runs/run_starts.hpp"
#include "tests/unit/core/fake.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

namespace {

// What the hooks saw, in order.
struct StartsSeen {
    std::vector<std::size_t> prepared;
    std::vector<std::pair<std::size_t, pid_t>> cloned;
    std::vector<std::size_t> exec_ok;
    std::vector<std::string> failed;  // "SERVICE: MESSAGE"
    std::vector<pid_t> pids;          // of the runs that exec'd
    int pump_soon = 0;
    bool pumping = false;

    // Reaps every run that exec'd and closes its pipes.
    void reap() {
        for (pid_t pid : pids) {
            wait_for(pid);
        }
        pids.clear();
    }
};

// Hooks over `seen` that prepare `spec` for every service (`broken`: none prepares).
RunStarts::Hooks starts_hooks(StartsSeen& seen, const config::ServiceSpec& spec,
                              bool broken = false) {
    return RunStarts::Hooks{
        [&seen, &spec, broken](std::size_t service, std::uint64_t run)
            -> std::expected<std::unique_ptr<PreparedLaunch>, LaunchFailure> {
            seen.prepared.push_back(service);
            if (broken) {
                return std::unexpected(
                    LaunchFailure{config::LaunchError::resources, "resources: test"});
            }
            return prepare_launch(LaunchRequest{&spec, run, {}});
        },
        [&seen](std::size_t service, pid_t pid) { seen.cloned.emplace_back(service, pid); },
        [&seen](std::size_t service, std::uint64_t,
                std::expected<Launched, LaunchFailure> outcome) {
            if (!outcome) {
                seen.failed.push_back(std::to_string(service) + ": " + outcome.error().message);
                return;
            }
            seen.exec_ok.push_back(service);
            seen.pids.push_back(outcome->pid);
            close_fds({outcome->stdout_fd, outcome->stderr_fd});
        },
        [](pid_t, int) {},
        [&seen] { ++seen.pump_soon; },
        [&seen] { return seen.pumping; },
    };
}

std::vector<config::ServiceSpec> six_services() {
    std::vector<config::ServiceSpec> specs;
    for (char c = 'a'; c < 'g'; ++c) {
        specs.push_back(core::test::spec(std::string(1, c)));
    }
    return specs;
}

}  // namespace

TEST_CASE("spawns go in order, a turn's budget at a time, the rest at the next turn") {
    TestLoop loop;
    StartsSeen seen;
    const config::ServiceSpec spec = make_spec({"/bin/sh", "-c", "exit 0"});
    {
        core::Supervisor sup = core::test::supervisor(six_services());
        RunStarts starts(loop.get(), sup, starts_hooks(seen, spec));
        REQUIRE(starts.start_thread());
        for (std::size_t service = 0; service < 6; ++service) {
            starts.spawn(service, 1);
        }
        static_assert(RunStarts::k_spawns_per_turn == 4);
        CHECK(seen.prepared == std::vector<std::size_t>{0, 1, 2, 3});
        CHECK(seen.pump_soon > 0);       // the rest is due at the next turn's pump
        CHECK(starts.spawn_due() == 0);  // this turn's budget is spent

        starts.new_turn();
        CHECK(starts.spawn_due() == 2);
        CHECK(seen.prepared == std::vector<std::size_t>{0, 1, 2, 3, 4, 5});

        REQUIRE(loop.run_until([&] { return seen.exec_ok.size() == 6; }, 10s));
        CHECK(seen.failed.empty());
        // Each run's pid was known (cloned) before its outcome.
        REQUIRE(seen.cloned.size() == 6);
        for (pid_t pid : seen.pids) {
            CHECK(std::ranges::find(seen.cloned, pid, &std::pair<std::size_t, pid_t>::second) !=
                  seen.cloned.end());
        }
        seen.reap();
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("nothing is spawned inside the reaping: the spawn waits for a pump") {
    TestLoop loop;
    StartsSeen seen;
    const config::ServiceSpec spec = make_spec({"/bin/sh", "-c", "exit 0"});
    {
        core::Supervisor sup = core::test::supervisor(six_services());
        RunStarts starts(loop.get(), sup, starts_hooks(seen, spec));
        REQUIRE(starts.start_thread());
        {
            auto reaping = starts.reaping();
            CHECK(starts.in_reaping());
            starts.spawn(2, 1);
            CHECK(starts.spawn_due() == 0);
            CHECK(seen.prepared.empty());
            CHECK(seen.pump_soon == 1);
        }
        CHECK_FALSE(starts.in_reaping());
        CHECK(starts.spawn_due() == 1);
        CHECK(seen.prepared == std::vector<std::size_t>{2});
        REQUIRE(loop.run_until([&] { return seen.exec_ok.size() == 1; }, 10s));
        seen.reap();
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("a launch that cannot be prepared is reported at the next turn, not in the spawn") {
    TestLoop loop;
    StartsSeen seen;
    const config::ServiceSpec spec = make_spec({"/bin/sh", "-c", "exit 0"});
    {
        core::Supervisor sup = core::test::supervisor(six_services());
        RunStarts starts(loop.get(), sup, starts_hooks(seen, spec, true));
        REQUIRE(starts.start_thread());
        starts.spawn(1, 1);
        CHECK(seen.prepared == std::vector<std::size_t>{1});
        // A service restarted at once after such a failure would otherwise fail and
        // respawn inside this very pump, for ever.
        CHECK(seen.failed.empty());
        REQUIRE(loop.run_until([&] { return !seen.failed.empty(); }, 5s));
        CHECK(seen.failed == std::vector<std::string>{"1: resources: test"});
        CHECK(seen.cloned.empty());
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("resolve() waits for every launch in flight; a failed launch's child is claimed") {
    TestLoop loop;
    StartsSeen seen;
    config::ServiceSpec spec = make_spec({"/bin/sh", "-c", "exit 0"});
    spec.process.edit().cwd = "/nonexistent/pkit-run-starts";  // fails in the child
    {
        core::Supervisor sup = core::test::supervisor(six_services());
        RunStarts starts(loop.get(), sup, starts_hooks(seen, spec));
        REQUIRE(starts.start_thread());
        {
            auto reaping = starts.reaping();
            starts.spawn(0, 1);  // queued: resolve() spawns it too
        }
        seen.pump_soon = 0;
        CHECK(starts.resolve() > 0);
        // Without a turn of the loop: the child was cloned and its failure is known.
        REQUIRE(seen.cloned.size() == 1);
        REQUIRE(seen.failed.size() == 1);
        CHECK(seen.failed[0].starts_with("0: "));
        CHECK(seen.failed[0].find("/nonexistent/pkit-run-starts") != std::string::npos);
        CHECK(seen.pump_soon == 1);  // what the outcome changed is pumped at the next turn

        // Its child exits (127) and is reaped: a failed launch's exit, never a run's.
        const pid_t child = seen.cloned[0].second;
        const int status = wait_for(child);
        ChildExit exit{child, status, std::nullopt, nullptr, decode_wait_status(status)};
        CHECK(starts.on_child_exit(exit));
        ChildExit again = exit;
        CHECK_FALSE(starts.on_child_exit(again));  // claimed once
        ChildExit other{child + 100000, 0, std::nullopt, nullptr, {}};
        CHECK_FALSE(starts.on_child_exit(other));

        // During a pump, resolve() leaves the pump to it.
        seen.pumping = true;
        seen.pump_soon = 0;
        starts.spawn(3, 2);
        CHECK(starts.resolve() > 0);
        CHECK(seen.pump_soon == 0);
        REQUIRE(seen.cloned.size() == 2);
        wait_for(seen.cloned[1].second);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("an exit of a pid nobody knows goes on at once while no launch is in flight") {
    TestLoop loop;
    StartsSeen seen;
    const config::ServiceSpec spec = make_spec({"/bin/sh", "-c", "exit 0"});
    {
        core::Supervisor sup = core::test::supervisor(six_services());
        RunStarts starts(loop.get(), sup, starts_hooks(seen, spec));
        REQUIRE(starts.start_thread());
        CHECK_FALSE(starts.defer_unknown(123456, 0));
        CHECK(starts.take_spawned() == 0);
    }
    CHECK(loop.close() == 0);
}

}  // namespace pkit::shell::test
