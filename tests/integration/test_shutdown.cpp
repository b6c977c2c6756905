// Shutdown (SPEC §7): dependents stop before what they depend on, independent services
// stop concurrently, nothing is left behind, and pkitd exits 0.

#include <signal.h>

#include <algorithm>
#include <thread>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// A service that, on SIGTERM, appends "NAME term T" to DIR/order, takes `linger`
// seconds, appends "NAME exit T" and exits 0. DIR/NAME.armed exists once the trap is set.
std::string lingering_service(const TempDir& dir, const std::string& name,
                              const std::string& linger) {
    const std::string order = dir.file("order");
    return "trap 'echo " + name + " term $(date +%s.%N) >> " + order + "; sleep " + linger +
           "; echo " + name + " exit $(date +%s.%N) >> " + order + "; exit 0' TERM; touch " +
           dir.file(name + ".armed") + "; while :; do sleep 0.05; done";
}

// The words "NAME event" of DIR/order, in order.
std::vector<std::string> order_of(const TempDir& dir) {
    std::vector<std::string> out;
    for (const auto& line : read_lines(dir.path() / "order")) {
        out.push_back(line.substr(0, line.rfind(' ')));
    }
    return out;
}

void wait_armed(const TempDir& dir, std::initializer_list<std::string> names) {
    for (const auto& name : names) {
        wait_file(dir.file(name + ".armed"));
    }
}

}  // namespace

TEST_CASE("shutdown stops a dependent before the service it depends on") {
    TempDir dir;
    dir.service("a", sh_command(lingering_service(dir, "a", "0.3")) + "after = [\"b\"]\n");
    dir.service("b", sh_command(lingering_service(dir, "b", "0")));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    wait_armed(dir, {"a", "b"});

    CHECK(pkitd.stop() == 0);
    const std::vector<std::string> expected{"a term", "a exit", "b term", "b exit"};
    CHECK_MESSAGE(order_of(dir) == expected, "order file:\n" << read_file(dir.path() / "order"));
}

TEST_CASE("shutdown stops independent services concurrently") {
    TempDir dir;
    dir.service("x", sh_command(lingering_service(dir, "x", "1")));
    dir.service("y", sh_command(lingering_service(dir, "y", "1")));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    wait_armed(dir, {"x", "y"});

    const auto start = Clock::now();
    CHECK(pkitd.stop() == 0);
    const double took = seconds_since(start);
    CHECK(took >= 0.9);
    // One after the other, the second would get its SIGTERM only after the first
    // exited: both got it before either exited. (The order file, not the shutdown's
    // wall time, so that a loaded machine's slow forks do not count.)
    const auto order = order_of(dir);
    INFO("shutdown took " << took << " s; order file:\n" << read_file(dir.path() / "order"));
    REQUIRE(order.size() == 4);
    std::vector<std::string> first_two(order.begin(), order.begin() + 2);
    std::sort(first_two.begin(), first_two.end());
    CHECK(first_two == std::vector<std::string>{"x term", "y term"});
}

TEST_CASE("after shutdown no zombie and no process of any service survives and pkitd exits 0") {
    TempDir dir;
    // Orphans (double fork) come to pkitd, the subreaper; a background child stays in
    // the run's group; a second service runs a pipeline.
    dir.service("orphans", sh_command("for i in 1 2 3 4 5 6 7 8 9 10; do (sleep 0.1 &); done; "
                                      "sleep 1000 & touch " +
                                      dir.file("armed") + "; wait"));
    dir.service("pipeline", sh_command("sleep 1000 | cat"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_file(dir.file("armed"));
    wait_status(client, "pipeline", state_is("running"), 5s, "running");

    wait_for([&] { return daemon_status(client).value("orphans_reaped", 0) >= 10; }, 5s,
             "10 orphans reaped", [&] { return daemon_status(client).dump(); });
    wait_for([&] { return zombies_among(children_of(pkitd.pid())).empty(); }, 5s,
             "no zombie child of pkitd", [&] { return describe(children_of(pkitd.pid())); });

    CHECK(pkitd.stop() == 0);
    const auto left = marker_processes(pkitd.marker());
    CHECK_MESSAGE(left.empty(), "left behind:" << describe(left));
}

TEST_CASE("SIGINT shuts down like SIGTERM and a second signal forces the exit with 128+N") {
    TempDir dir;
    SUBCASE("SIGINT: exit 0") {
        dir.service("svc", sh_command("exec sleep 1000"));
        Daemon pkitd(dir);
        pkitd.wait_ready();
        pkitd.signal(SIGINT);
        CHECK(pkitd.wait_exit(10s) == 0);
    }
    SUBCASE("a second SIGTERM during shutdown: exit 128+15, everything killed") {
        dir.service("svc", sh_command("trap '' TERM; touch " + dir.file("armed") + "; sleep 30") +
                               "[stop]\ntimeout = \"20s\"\n");
        Daemon pkitd(dir);
        pkitd.wait_ready();
        wait_file(dir.file("armed"));
        pkitd.signal(SIGTERM);
        // Not an assertion: two signals sent at once may be merged into one by the kernel.
        std::this_thread::sleep_for(300ms);
        REQUIRE_FALSE(pkitd.exited());
        pkitd.signal(SIGTERM);
        CHECK(pkitd.wait_exit(5s) == 128 + SIGTERM);
        wait_for([&] { return marker_processes(pkitd.marker()).empty(); }, 5s,
                 "every process killed",
                 [&] { return describe(marker_processes(pkitd.marker())); });
    }
}

TEST_CASE("shutdown_timeout bounds the whole shutdown whatever the stop timeouts") {
    TempDir dir;
    dir.daemon_config("shutdown_timeout = \"1s\"\n");
    dir.service("svc", sh_command("trap '' TERM; touch " + dir.file("armed") + "; sleep 30") +
                           "[stop]\ntimeout = \"20s\"\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    wait_file(dir.file("armed"));

    const auto start = Clock::now();
    CHECK(pkitd.stop() == 0);
    const double took = seconds_since(start);
    CHECK(took >= 0.5);
    CHECK(took < 3.0);
    const auto left = marker_processes(pkitd.marker());
    CHECK_MESSAGE(left.empty(), "left behind:" << describe(left));
}

TEST_CASE("a run the shutdown deadline killed is logged so, not as killed after its stop timeout") {
    TempDir dir;
    dir.daemon_config("shutdown_timeout = \"1s\"\n");
    // Both ignore SIGTERM: `late` outlives the shutdown deadline, `quick` its own timeout.
    dir.service("late", sh_command("trap '' TERM; touch " + dir.file("late.armed") + "; sleep 30") +
                            "[stop]\ntimeout = \"20s\"\n");
    dir.service("quick",
                sh_command("trap '' TERM; touch " + dir.file("quick.armed") + "; sleep 30") +
                    "[stop]\ntimeout = \"0.2s\"\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    wait_armed(dir, {"late", "quick"});
    CHECK(pkitd.stop() == 0);
    std::vector<std::string> late;
    std::vector<std::string> quick;
    for (const std::string& line : lines_of(pkitd.log())) {
        if (line.starts_with("pkitd: late: ")) {
            late.push_back(line);
        } else if (line.starts_with("pkitd: quick: ")) {
            quick.push_back(line);
        }
    }
    auto says = [](const std::vector<std::string>& lines, const std::string& words) {
        return std::ranges::any_of(
            lines, [&](const std::string& l) { return l.find(words) != std::string::npos; });
    };
    INFO(pkitd.log());
    CHECK(says(late, "killed by SIGKILL at the shutdown deadline"));
    CHECK_FALSE(says(late, "after the stop timeout"));
    CHECK(says(quick, "killed by SIGKILL after the stop timeout"));
    CHECK_FALSE(says(quick, "shutdown deadline"));
}
