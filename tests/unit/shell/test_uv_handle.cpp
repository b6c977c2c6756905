// UvHandle and Timer: handles are closed through uv_close and freed by the loop, also
// when their owner is destroyed from inside a callback.

#include <memory>

#include "daemon/shell/uv_handle.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

TEST_CASE("a timer fires once, repeats when asked, and stops") {
    TestLoop loop;
    {
        Timer once(loop.get());
        Timer repeating(loop.get());
        int once_count = 0;
        int repeat_count = 0;
        once.start(1, [&] { ++once_count; });
        repeating.start(
            1,
            [&] {
                if (++repeat_count == 3) {
                    repeating.stop();
                }
            },
            1);
        CHECK(loop.run_until([&] { return once_count == 1 && repeat_count == 3; }));
        CHECK(!once.active());
        CHECK(!repeating.active());
        // Nothing is armed, so the loop has nothing left to run for.
        uv_run(loop.get(), UV_RUN_NOWAIT);
        CHECK(once_count == 1);
        CHECK(repeat_count == 3);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("a timer may destroy itself in its own callback") {
    TestLoop loop;
    auto timer = std::make_unique<Timer>(loop.get());
    bool fired = false;
    timer->start(1, [&] {
        fired = true;
        timer.reset();
    });
    CHECK(loop.run_until([&] { return fired; }));
    CHECK(timer == nullptr);
    CHECK(loop.close() == 0);
}

TEST_CASE("destroying an armed timer cancels it; an uninitialised handle is just freed") {
    TestLoop loop;
    bool fired = false;
    {
        Timer timer(loop.get());
        timer.start(0, [&] { fired = true; });
    }
    {
        UvHandle<uv_pipe_t> never_initialised(nullptr);
        CHECK(!never_initialised.initialized());
    }
    uv_run(loop.get(), UV_RUN_NOWAIT);
    CHECK(!fired);
    CHECK(loop.close() == 0);
}

}  // namespace pkit::shell::test
