// Many reloads in a row (SPEC §8): pkitd's open file descriptors do not grow and its
// resident memory stays within a small tolerance, whether a reload changes a service
// (a new run, new pipes) or nothing at all.

#include <dirent.h>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// The entries of /proc/PID/fd, or -1 when it cannot be read.
int fd_count(pid_t pid) {
    DIR* d = ::opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
    if (d == nullptr) {
        return -1;
    }
    int n = 0;
    while (const dirent* entry = ::readdir(d)) {
        if (entry->d_name[0] != '.') {
            ++n;
        }
    }
    ::closedir(d);
    return n;
}

std::string runner_toml(int generation) {
    return sh_command("exec sleep " + std::to_string(1000 + generation)) +
           "[stop]\ntimeout = \"1s\"\n";
}

// Rewrites `flip` (a changed definition on every other reload), reloads and waits
// until flip runs again.
void reload_once(const TempDir& dir, Client& client, int k) {
    if (k % 2 == 0) {
        dir.service("flip", runner_toml(k + 1));
    }
    json reply = client.command("reload");
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    REQUIRE(reply["result"]["changed"].size() == (k % 2 == 0 ? 1U : 0U));
    wait_status(client, "flip", state_is("running"), 10s, "flip runs again");
}

}  // namespace

TEST_CASE("50 reloads in a row grow neither pkitd's fds nor its memory") {
    TempDir dir;
    dir.daemon_config("[groups.g]\nmembers = [\"steady\", \"flip\"]\n");
    dir.service("steady", runner_toml(0));
    dir.service("flip", runner_toml(0));
    dir.service("solo", runner_toml(0));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json steady = wait_status(client, "steady", state_is("running"), 10s, "steady runs");
    wait_status(client, "flip", state_is("running"), 10s, "flip runs");
    const pid_t pid = pkitd.target_pid();

    // Warm up first: the allocator's first growth is no leak.
    for (int k = 0; k < 10; ++k) {
        reload_once(dir, client, k);
    }
    const int fds_before = fd_count(pid);
    const std::optional<long> rss_before = rss_kb(pid);
    REQUIRE(fds_before > 0);
    REQUIRE(rss_before);

    const auto start = Clock::now();
    for (int k = 10; k < 60; ++k) {
        reload_once(dir, client, k);
    }
    MESSAGE("50 reloads in " << seconds_since(start) << " s; " << fds_before << " fds and "
                             << *rss_before << " kB before");
    // The last run of flip has its pipes open like the one measured before.
    wait_for([&] { return fd_count(pid) <= fds_before; }, 5s, "no fd growth",
             [&] {
                 return std::to_string(fd_count(pid)) + " fds, " + std::to_string(fds_before) +
                        " before";
             });
    const std::optional<long> rss_after = rss_kb(pid);
    REQUIRE(rss_after);
    CHECK_MESSAGE(*rss_after - *rss_before < 1024,
                  "VmRSS " << *rss_before << " kB before, " << *rss_after << " kB after");

    json now = status(client, "steady");
    CHECK(now["pid"] == steady["pid"]);
    CHECK(now["run"] == 1);
    CHECK(status(client, "flip")["run"] == 31);
    CHECK(pkitd.stop() == 0);
}
