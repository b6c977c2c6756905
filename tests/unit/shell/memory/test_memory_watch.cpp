// MemoryWatch ([health] memory_max, SPEC §20): the tick at the smallest interval, which
// runs are due at each tick (first measured one interval after they are first seen),
// and a real pass over a live process handed back on the loop.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <vector>

#include "daemon/shell/memory/memory_watch.hpp"
#include "tests/unit/core/fake.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

namespace {

config::ServiceSpec watched(const std::string& name, std::chrono::milliseconds interval) {
    config::ServiceSpec s = core::test::spec(name);
    s.health.edit().memory_max = 1ULL << 30;
    s.health.edit().memory_interval = interval;
    return s;
}

// `sup` started, each service's run 1 spawned as pid 100 + index.
void spawn_all(core::Supervisor& sup) {
    sup.start(core::test::at(0));
    for (std::size_t i = 0; i < sup.size(); ++i) {
        sup.on_spawned(i, 1, static_cast<pid_t>(100 + i), core::test::at(0));
    }
    sup.take_actions();
}

}  // namespace

TEST_CASE("memory_tick_ms: the smallest memory_interval of the services with memory_max") {
    using namespace std::chrono_literals;
    core::Supervisor none = core::test::supervisor({core::test::spec("plain")});
    CHECK(memory_tick_ms(none) == 0);
    // memory_interval without memory_max does not count (the loader refuses it anyway).
    config::ServiceSpec stray = core::test::spec("stray");
    stray.health.edit().memory_interval = 200ms;
    core::Supervisor some = core::test::supervisor(
        {watched("a", 5s), watched("b", 1500ms), stray, core::test::spec("plain")});
    CHECK(memory_tick_ms(some) == 1500);
}

TEST_CASE("due_runs: a run is measured one interval after it is first seen, then every one") {
    using namespace std::chrono_literals;
    core::Supervisor sup = core::test::supervisor(
        {watched("a-fast", 1s), watched("b-slow", 3s), core::test::spec("c-plain")});
    spawn_all(sup);
    std::vector<MemoryClock> last;
    const std::uint64_t tick = memory_tick_ms(sup);
    REQUIRE(tick == 1000);
    CHECK(due_runs(sup, 10'000, tick, last).empty());  // first seen
    CHECK(due_runs(sup, 11'000, tick, last) == std::vector<std::size_t>{0});
    CHECK(due_runs(sup, 12'000, tick, last) == std::vector<std::size_t>{0});
    // A tick a little early still measures (within half a tick of the interval).
    CHECK(due_runs(sup, 12'900, tick, last) == std::vector<std::size_t>{0, 1});
    CHECK(due_runs(sup, 13'900, tick, last) == std::vector<std::size_t>{0});
    // A new run is seen afresh: measured one interval after it.
    sup.on_exit(100, core::test::exited(1), core::test::at(14));
    sup.take_actions();
    CHECK(due_runs(sup, 14'900, tick, last).empty());  // not running: not measured
}

TEST_CASE("MemoryWatch: a live run's memory measured off the loop and handed back") {
    using namespace std::chrono_literals;
    // The run: a child in a process group of its own, holding 16 MiB it wrote.
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        setpgid(0, 0);
        std::vector<char> held(16u << 20, 'x');
        for (;;) {
            pause();
        }
    }
    setpgid(child, child);
    core::Supervisor sup = core::test::supervisor({watched("web", 100ms)});
    sup.start(core::test::at(0));
    sup.on_spawned(0, 1, child, core::test::at(0));
    sup.take_actions();

    TestLoop loop;
    std::vector<MemorySample> seen;
    int cgroup_asks = 0;
    {
        MemoryWatch watch(
            loop.get(), sup,
            [&](const std::vector<std::size_t>& services) {
                ++cgroup_asks;
                CHECK(services == std::vector<std::size_t>{0});
                return std::vector<RunCgroupRead>{};  // no cgroups
            },
            [&](const std::vector<MemorySample>& samples) {
                seen.insert(seen.end(), samples.begin(), samples.end());
            });
        watch.refresh();
        CHECK(
            loop.run_until([&] { return !seen.empty() && seen.back().bytes >= (16u << 20); }, 10s));
    }
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    REQUIRE_FALSE(seen.empty());
    CHECK(seen.back().service == 0);
    CHECK(seen.back().run == 1);
    CHECK_FALSE(seen.back().cgroup);
    CHECK(cgroup_asks >= 1);
    CHECK(loop.close() == 0);
}

}  // namespace pkit::shell::test
