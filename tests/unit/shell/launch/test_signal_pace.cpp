// SignalPace: a turn sends what its budget allows, the rest waits in order for the next
// turns, and flush() sends everything at once.

#include <string>
#include <vector>

#include "daemon/shell/launch/signal_pace.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

TEST_CASE("signals beyond a turn's budget wait, in order, for the next turns") {
    TestLoop loop;
    {
        std::vector<int> sent;
        // Three a turn, and time is no bound.
        SignalPace pace(loop.get(), ~std::uint64_t{0}, 3);
        for (int k = 0; k < 8; ++k) {
            pace.submit([&sent, k] { sent.push_back(k); });
        }
        CHECK(sent == std::vector<int>{0, 1, 2});
        CHECK(pace.waiting() == 5);
        uv_run(loop.get(), UV_RUN_NOWAIT);
        CHECK(sent == std::vector<int>{0, 1, 2, 3, 4, 5});
        // A signal submitted while others wait goes behind them, whatever the budget.
        pace.submit([&sent] { sent.push_back(8); });
        CHECK(loop.run_until([&] { return pace.waiting() == 0; }));
        CHECK(sent == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8});
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("a time budget lets at least one signal through a turn") {
    TestLoop loop;
    {
        int sent = 0;
        SignalPace pace(loop.get(), 0);  // no time at all
        for (int k = 0; k < 4; ++k) {
            pace.submit([&sent] { ++sent; });
        }
        CHECK(sent == 1);
        CHECK(loop.run_until([&] { return sent == 4; }));
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("flush sends what waits at once; a send may submit another") {
    TestLoop loop;
    {
        std::vector<std::string> sent;
        SignalPace pace(loop.get(), ~std::uint64_t{0}, 1);
        pace.submit([&] { sent.push_back("a"); });
        pace.submit([&] {
            sent.push_back("b");
            pace.submit([&] { sent.push_back("c"); });
        });
        pace.submit([&] { sent.push_back("d"); });
        CHECK(sent == std::vector<std::string>{"a"});
        pace.flush();
        CHECK(sent == std::vector<std::string>{"a", "b", "d", "c"});
        CHECK(pace.waiting() == 0);
        uv_run(loop.get(), UV_RUN_NOWAIT);  // nothing left armed
        CHECK(sent.size() == 4);
    }
    CHECK(loop.close() == 0);
}

}  // namespace pkit::shell::test
