// The one deadline timer (deadlines/deadlines.hpp): armed at the earliest of the core's,
// each owner's and the wake-ups; when it fires, the owners first, in the order added,
// then the core's turn.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "daemon/shell/deadlines/deadlines.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

namespace {

struct NamedOwner final : DeadlineOwner {
    NamedOwner(std::string owner_name, std::vector<std::string>& order)
        : name(std::move(owner_name)), log(order) {}
    std::optional<core::TimePoint> next_deadline() const override { return due; }
    void on_time(core::TimePoint now) override {
        log.push_back(name);
        if (due && *due <= now) {
            due.reset();
        }
    }
    std::string name;
    std::vector<std::string>& log;
    std::optional<core::TimePoint> due;
};

core::Now clock_now() {
    return core::Now{std::chrono::steady_clock::now(), 0.0};
}

}  // namespace

TEST_CASE("the timer fires at the earliest owner's deadline: owners in order, then the core") {
    TestLoop loop;
    std::vector<std::string> order;
    {
        Deadlines deadlines(loop.get(), clock_now, [&](core::Now) { order.push_back("core"); });
        NamedOwner first("leftovers", order);
        NamedOwner second("cgroups", order);
        deadlines.add(first);
        deadlines.add(second);
        deadlines.arm(std::nullopt);
        CHECK_FALSE(deadlines.armed());  // nothing due anywhere
        second.due = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
        deadlines.arm(std::chrono::steady_clock::now() + std::chrono::hours(1));
        CHECK(deadlines.armed());
        REQUIRE(loop.run_until([&] { return !order.empty(); }, std::chrono::seconds(5)));
        CHECK(order == std::vector<std::string>{"leftovers", "cgroups", "core"});
    }
    loop.close();
}

TEST_CASE("a wake-up arms the timer alone and is dropped once passed") {
    TestLoop loop;
    int fired = 0;
    {
        Deadlines deadlines(loop.get(), clock_now, [&](core::Now) { ++fired; });
        deadlines.wake_at(std::chrono::steady_clock::now() + std::chrono::milliseconds(10));
        deadlines.arm(std::nullopt);
        CHECK(deadlines.armed());
        REQUIRE(loop.run_until([&] { return fired >= 1; }, std::chrono::seconds(5)));
        // The wake-up is dropped by the firing that finds it passed. libuv's timer counts
        // from the loop's cached time, so it may fire a hair early; the Daemon's pump
        // re-arms after every firing, and so does this loop until the wake-up is gone.
        REQUIRE(loop.run_until(
            [&] {
                deadlines.arm(std::nullopt);
                return !deadlines.armed();
            },
            std::chrono::seconds(5)));
        CHECK(fired >= 1);
    }
    loop.close();
}

}  // namespace pkit::shell::test
