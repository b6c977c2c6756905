// Leftovers (runs/leftovers.hpp): what is left of a run's process group after its exit
// gets the stop signal, is kept with its SIGKILL deadline while the group lives, killed
// when the deadline is due, and forgotten once the group is empty; an upgrade hands the
// groups over with the time left.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/shell/runs/leftovers.hpp"
#include "tests/unit/core/fake.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

namespace {

// A process in a group of its own that ignores SIGTERM: a leftover that outlives the
// stop signal.
pid_t stubborn_group() {
    int ready[2];
    REQUIRE(::pipe(ready) == 0);
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::setpgid(0, 0);
        ::signal(SIGTERM, SIG_IGN);
        (void)!::write(ready[1], "r", 1);
        for (;;) {
            ::pause();
        }
    }
    ::setpgid(pid, pid);
    ::close(ready[1]);
    char byte = 0;
    REQUIRE(::read(ready[0], &byte, 1) == 1);  // SIGTERM ignored from here on
    ::close(ready[0]);
    return pid;
}

}  // namespace

TEST_CASE("a group still alive is kept until its deadline kills it, then pruned") {
    const pid_t pgid = stubborn_group();
    Leftovers left;
    const core::TimePoint t0 = core::test::mono(10);
    left.cleanup(core::CleanupGroupAction{0, pgid, SIGTERM, std::chrono::seconds(2)}, t0);
    REQUIRE_FALSE(left.empty());
    CHECK(left.next_deadline() == t0 + std::chrono::seconds(2));
    left.on_time(t0 + std::chrono::seconds(1));  // not due: nothing
    CHECK(::kill(pgid, 0) == 0);

    upgrade::DaemonFacts facts;
    left.hand_over(facts, t0);
    REQUIRE(facts.leftovers.size() == 1);
    CHECK(facts.leftovers[0].kill_in_ns == 2'000'000'000);

    left.on_time(t0 + std::chrono::seconds(2));  // due: SIGKILL to the group
    CHECK_FALSE(left.next_deadline().has_value());
    int status = 0;
    REQUIRE(::waitpid(pgid, &status, 0) == pgid);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGKILL);
    CHECK(left.prune());  // the group is empty now
}

TEST_CASE("a group already empty is not kept") {
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::setpgid(0, 0);
        ::_exit(0);
    }
    ::setpgid(pid, pid);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    Leftovers left;
    left.cleanup(core::CleanupGroupAction{0, pid, SIGTERM, std::chrono::seconds(2)},
                 core::test::mono(1));
    CHECK(left.empty());
}

}  // namespace pkit::shell::test
