// Idle (the acceptance): with 10 running services and no timer due, pkitd is
// woken 0 times in 2 s, counted as the voluntary + involuntary context switches of all
// its threads in /proc. Reading /proc does not wake pkitd.

#include <sys/types.h>

#include <string>
#include <thread>
#include <vector>

#include "tests/integration/harness.hpp"
#include "tests/integration/harness_switches.hpp"
#include "tests/integration/http_client.hpp"

using namespace pkit::itest;

TEST_CASE("idle: with 10 running services and no timer due pkitd is woken 0 times in 2 s") {
    constexpr int k_services = 10;
    TempDir dir;
    std::vector<std::string> names;
    for (int i = 0; i < k_services; ++i) {
        names.push_back("idle" + std::to_string(i));
        // No probes, no timeouts: nothing of these services has a deadline.
        dir.service(names.back(), sh_command("exec sleep 1000"));
    }
    Daemon pkitd(dir);
    pkitd.wait_ready();
    const pid_t pid = pkitd.target_pid();

    std::vector<long> pids;
    {
        Client client = pkitd.client();
        for (const auto& name : names) {
            json s = wait_status(client, name, state_is("running"), 10s, name + " runs");
            pids.push_back(s["pid"].get<long>());
        }
    }  // the connection is closed: pkitd has no client left to answer

    // Settling (not the assertion): the close, the last log lines and whatever the
    // start-up left are done once the count stays the same over a quiet period.
    settle_switches(pid, 500ms, 20s);

    // The measurement: a 2 s window of an idle pkitd.
    const Switches before = read_switches(pid);
    std::this_thread::sleep_for(2s);
    const Switches after = read_switches(pid);
    INFO("before: " << text_of(before));
    INFO("after:  " << text_of(after));
    INFO("woken " << (after.voluntary - before.voluntary) << " voluntary + "
                  << (after.nonvoluntary - before.nonvoluntary) << " involuntary times in 2 s");
    REQUIRE(before.threads > 0);
    REQUIRE(pid_alive(pid));
    CHECK(after.voluntary - before.voluntary == 0);
    CHECK(after.nonvoluntary - before.nonvoluntary == 0);
    REQUIRE(after.total() - before.total() == 0);

    // The services were idle too: still the same runs.
    Client client = pkitd.client();
    for (std::size_t i = 0; i < names.size(); ++i) {
        json s = status(client, names[i]);
        CHECK(s["state"] == "running");
        CHECK(s["pid"] == pids[i]);
        CHECK(s["run"] == 1);
    }
    CHECK(pkitd.stop() == 0);
}

TEST_CASE(
    "idle: with the [http] endpoint on, after a scrape and with no client pkitd is woken 0 times "
    "in 2 s") {
    TempDir dir;
    const int port = unused_port();
    dir.daemon_config("[http]\nlisten = \"127.0.0.1:" + std::to_string(port) + "\"\n");
    dir.service("idle", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    const pid_t pid = pkitd.target_pid();
    {
        Client client = pkitd.client();
        wait_status(client, "idle", state_is("running"), 10s, "idle runs");
    }
    // A scrape on a connection the client closes: pkitd closes its side and drops the
    // connection's idle timer with it.
    CHECK(http_get(port, "/metrics").status == 200);

    Switches last = read_switches(pid);
    auto last_change = Clock::now();
    wait_for(
        [&] {
            const Switches now = read_switches(pid);
            if (now.total() != last.total()) {
                last = now;
                last_change = Clock::now();
                return false;
            }
            return Clock::now() - last_change >= 500ms;
        },
        20s, "pkitd's context switches stay unchanged for 500 ms", [&] { return text_of(last); });
    const Switches before = read_switches(pid);
    std::this_thread::sleep_for(2s);
    const Switches after = read_switches(pid);
    INFO("before: " << text_of(before) << "; after: " << text_of(after));
    CHECK(after.total() - before.total() == 0);
    CHECK(http_get(port, "/healthz").status == 200);
    CHECK(pkitd.stop() == 0);
}
