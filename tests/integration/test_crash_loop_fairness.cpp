// pkitd is never knocked over by what it supervises: 30 services crash-looping with no
// backoff at all (exiting at once, or failing to launch) leave it answering its socket,
// reaping its children and obeying SIGTERM. The bounds are liveness deadlines, not
// speed: the figures belong to bench/.

#include <signal.h>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

constexpr int k_services = 30;

// The zombie children of `pkitd` right now.
std::vector<ProcInfo> zombie_children(pid_t pkitd) {
    return zombies_among(children_of(pkitd));
}

}  // namespace

TEST_CASE("30 services crash-looping at zero backoff leave pkitd answering, reaping, stopping") {
    TempDir dir;
    std::string command;
    SUBCASE("each run exits at once") {
        command = "command = [\"/bin/true\"]\n";
    }
    SUBCASE("no run can even be launched") {
        command = "command = [" + toml_str(dir.file("missing")) + "]\n";
    }
    for (int i = 0; i < k_services; ++i) {
        dir.service("loop" + std::to_string(i), command + restart_table("always", "0s"));
    }
    Daemon pkitd(dir);
    pkitd.wait_ready(20s);

    // The loop really spins: every service keeps restarting.
    Client client = pkitd.client();
    wait_status(
        client, "loop0", [](const json& s) { return s.value("restarts", 0) >= 5; }, 30s,
        "loop0 restarts over and over");

    std::size_t most_zombies = 0;
    std::string zombies_seen;
    for (int i = 0; i < 8; ++i) {
        // A new connection each time: accepting must not starve either.
        Client asker = pkitd.client();
        json reply = asker.command("status", 5s);
        REQUIRE_MESSAGE(reply.value("ok", false), reply.dump());
        CHECK(reply["result"]["services"].size() == k_services);
        const auto zombies = zombie_children(pkitd.pid());
        if (zombies.size() > most_zombies) {
            most_zombies = zombies.size();
            zombies_seen = describe(zombies);
        }
    }
    // At most one unreaped run per service, and for a launch failure one more: its
    // report pipe says it failed (and the service launches again) before its child is
    // reaped. A loop that stopped reaping piles up far more (99 of 100 before).
    CHECK_MESSAGE(most_zombies <= 2 * k_services, "zombies of pkitd:\n" << zombies_seen);
    // Still spinning after all that: the answers did not come from a stalled loop.
    const int restarts = status(client, "loop0").value("restarts", 0);
    wait_status(
        client, "loop0", [&](const json& s) { return s.value("restarts", 0) > restarts; }, 10s,
        "loop0 still restarts");

    CHECK(pkitd.stop(20s) == 0);
    const auto left = marker_processes(pkitd.marker());
    CHECK_MESSAGE(left.empty(), "left behind:" << describe(left));
}
