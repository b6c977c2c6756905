// RunOutput (runs/run_output.hpp): a run's pipes read into lines, drained when the run's
// exit is offered (never claimed), Ended once both reach end of file, and the slot held
// while a pipe is open.

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "daemon/shell/runs/run_output.hpp"
#include "tests/unit/core/fake.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

namespace {

struct Pipes {
    int out[2] = {-1, -1};
    int err[2] = {-1, -1};
    Pipes() {
        REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
        REQUIRE(::pipe2(err, O_CLOEXEC) == 0);
    }
};

}  // namespace

TEST_CASE("a run's exit drains its last lines before the core hears of it, and is not claimed") {
    TestLoop loop;
    std::vector<std::string> lines;
    std::vector<std::uint64_t> ended;
    {
        core::Supervisor sup = core::test::supervisor({core::test::spec("web")});
        RunOutput output(
            loop.get(), sup,
            [&](std::size_t, std::uint64_t, core::Stream stream, std::string_view text) {
                lines.push_back(std::string(stream == core::Stream::stdout_ ? "out:" : "err:") +
                                std::string(text));
            },
            [&](std::size_t, std::uint64_t run) { ended.push_back(run); },
            [](std::string_view, const std::string&) {});
        Pipes p;
        output.attach(0, 1, p.out[0], p.err[0]);
        CHECK(output.holds(0));
        REQUIRE(::write(p.out[1], "first\nlast\n", 11) == 11);
        REQUIRE(::write(p.err[1], "oops\n", 5) == 5);
        ChildExit exit{4242, 0, 0, true, {}};
        CHECK_FALSE(output.on_child_exit(exit));  // offered, never claimed
        // Delivered within the offer, without a turn of the loop.
        CHECK(lines == std::vector<std::string>{"out:first", "out:last", "err:oops"});

        ::close(p.out[1]);
        ::close(p.err[1]);
        REQUIRE(loop.run_until([&] { return !ended.empty(); }, std::chrono::seconds(5)));
        CHECK(ended == std::vector<std::uint64_t>{1});
        output.sweep();
        CHECK_FALSE(output.holds(0));
    }
    loop.close();
}

TEST_CASE("an exit of no run drains nothing") {
    TestLoop loop;
    int lines = 0;
    {
        core::Supervisor sup = core::test::supervisor({core::test::spec("web")});
        RunOutput output(
            loop.get(), sup,
            [&](std::size_t, std::uint64_t, core::Stream, std::string_view) { ++lines; },
            [](std::size_t, std::uint64_t) {}, [](std::string_view, const std::string&) {});
        Pipes p;
        output.attach(0, 1, p.out[0], p.err[0]);
        REQUIRE(::write(p.out[1], "pending\n", 8) == 8);
        ChildExit orphan{999, 0, std::nullopt, true, {}};
        CHECK_FALSE(output.on_child_exit(orphan));
        CHECK(lines == 0);
        ::close(p.out[1]);
        ::close(p.err[1]);
    }
    loop.close();
}

}  // namespace pkit::shell::test
