// Launches cloned on pkitd's spawner thread (daemon/shell/launch/spawner.hpp): a child
// that exits before its launch's outcome reaches the loop is still its run's, a command
// on a service whose launch is still queued acts on that launch, and a shutdown with a
// queue of launches stops every child and exits.

#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// The `run` of every service in one status reply, by name.
std::map<std::string, long> runs_by_name(Client& client) {
    json reply = client.request({{"cmd", "status"}}, 5s);
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    std::map<std::string, long> runs;
    for (const auto& s : reply["result"]["services"]) {
        runs[s["name"].get<std::string>()] = s["run"].get<long>();
    }
    return runs;
}

std::string numbered(const char* prefix, int i) {
    char name[32];
    std::snprintf(name, sizeof name, "%s%03d", prefix, i);
    return name;
}

// `count` services sleep000, sleep001, ... running `sleep 1000`.
void add_sleepers(const TempDir& dir, int count) {
    for (int i = 0; i < count; ++i) {
        dir.service(numbered("sleep", i), "command = [\"sleep\", \"1000\"]\n");
    }
}

// Live processes of the case whose command line is exactly `cmdline` (argv joined by
// spaces).
std::vector<ProcInfo> processes_running(const TempDir& dir, const std::string& cmdline) {
    std::vector<ProcInfo> found;
    for (const ProcInfo& p : marker_processes(dir.path().string())) {
        if (p.cmdline == cmdline) {
            found.push_back(p);
        }
    }
    return found;
}

}  // namespace

TEST_CASE("spawner: children exiting before their launch reaches the loop stay their runs' exits") {
    // /bin/true exits as soon as it has exec'd, often before the spawner's outcome is
    // read: the reaper must hold such an exit, not count it as an orphan's (which would
    // leave the service `running` a dead pid and its run counter still).
    constexpr int k_services = 20;
    TempDir dir;
    for (int i = 0; i < k_services; ++i) {
        dir.service(numbered("true", i),
                    "command = [\"/bin/true\"]\n" + restart_table("always", "0"));
    }
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();

    std::map<std::string, long> first;
    wait_for(
        [&] {
            first = runs_by_name(client);
            return first.size() == k_services;
        },
        5s, "every service listed");
    std::map<std::string, long> last;
    wait_for(
        [&] {
            last = runs_by_name(client);
            for (const auto& [name, run] : first) {
                if (last[name] < run + 10) {
                    return false;
                }
            }
            return true;
        },
        30s, "every service restarted 10 more times",
        [&] {
            std::string text;
            for (const auto& [name, run] : last) {
                text += name + " run " + std::to_string(run) + " (was " +
                        std::to_string(first[name]) + ")\n";
            }
            return text;
        });
    json daemon = daemon_status(client);
    CHECK_MESSAGE(daemon["orphans_reaped"] == 0, daemon.dump());
    CHECK(pkitd.stop() == 0);
    CHECK(marker_processes(pkitd.marker()).empty());
}

TEST_CASE("spawner: SIGTERM with launches queued stops every child and pkitd exits 0") {
    // At wait_ready most of the 300 launches are still deferred or queued for the
    // spawner: the shutdown must wait for them, then stop each child.
    constexpr int k_services = 300;
    TempDir dir;
    add_sleepers(dir, k_services);
    Daemon pkitd(dir);
    pkitd.wait_ready();
    pkitd.signal(SIGTERM);
    auto status = pkitd.wait_exit(60s);
    REQUIRE_MESSAGE(status.has_value(), "pkitd did not exit; log:\n" << pkitd.log());
    CHECK(*status == 0);
    const auto left = marker_processes(pkitd.marker());
    CHECK_MESSAGE(left.empty(), "left behind:" << describe(left));
}

TEST_CASE("spawner: stop and restart of services whose launch is still queued") {
    constexpr int k_services = 300;
    TempDir dir;
    for (int i = 0; i < k_services; ++i) {
        // A distinct argv per service, to find each one's process.
        dir.service(numbered("svc", i),
                    "command = [\"sleep\", \"" + std::to_string(100000 + i) + "\"]\n");
    }
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    const std::string last = numbered("svc", k_services - 1);
    const std::string before_last = numbered("svc", k_services - 2);

    json stopped = client.request({{"cmd", "stop"}, {"services", {last}}}, 30s);
    REQUIRE_MESSAGE(stopped["ok"] == true, stopped.dump());
    json restarted = client.request({{"cmd", "restart"}, {"services", {before_last}}}, 30s);
    REQUIRE_MESSAGE(restarted["ok"] == true, restarted.dump());

    wait_status(client, last, state_is("stopped"), 15s, "the queued service stopped");
    const std::string last_cmdline = "sleep " + std::to_string(100000 + k_services - 1);
    wait_for([&] { return processes_running(dir, last_cmdline).empty(); }, 10s,
             "no process of the stopped service",
             [&] { return describe(processes_running(dir, last_cmdline)); });

    json s = wait_status(
        client, before_last,
        [](const json& st) { return st["state"] == "running" && st["run"].get<long>() >= 2; }, 15s,
        "the queued service restarted");
    const std::string restarted_cmdline = "sleep " + std::to_string(100000 + k_services - 2);
    wait_for([&] { return processes_running(dir, restarted_cmdline).size() == 1; }, 10s,
             "exactly one process of the restarted service",
             [&] { return describe(processes_running(dir, restarted_cmdline)); });
    CHECK(processes_running(dir, restarted_cmdline)[0].pid == s["pid"].get<pid_t>());
    CHECK(pkitd.stop(60s) == 0);
}

TEST_CASE("spawner: a start-up of 300 holds only a few prepared launches, not 300") {
    // Each prepared launch holds its three pipes (six fds) until the spawner has cloned
    // it; were all 300 prepared at once, pkitd would hold about 1,800 fds beside the
    // runs' two each. At most k_spawns_in_flight (8) are prepared ahead of the spawner.
    constexpr int k_services = 300;
    TempDir dir;
    add_sleepers(dir, k_services);
    Daemon pkitd(dir);
    const std::string fd_dir = "/proc/" + std::to_string(pkitd.target_pid()) + "/fd";
    auto open_fds = [&] {
        std::error_code error;
        std::size_t count = 0;
        for (std::filesystem::directory_iterator it(fd_dir, error), end; !error && it != end;
             it.increment(error)) {
            ++count;
        }
        return count;
    };
    // Two output fds per run, 8 launches of six, and pkitd's own (socket, loop, log...).
    const std::size_t bound = 2 * k_services + 8 * 6 + 64;
    // Sampled from pkitd's start, before its socket accepts: the launches begin as soon as
    // the tree is loaded.
    std::size_t most = 0;
    std::optional<Client> client;
    wait_for(
        [&] {
            most = std::max(most, open_fds());
            if (!client) {
                if (auto connected = Client::try_connect(pkitd.socket())) {
                    client.emplace(std::move(*connected));
                }
                return false;
            }
            json reply = client->request({{"cmd", "status"}}, 5s);
            std::size_t running = 0;
            for (const auto& s : reply["result"]["services"]) {
                running += s["state"] == "running" ? 1 : 0;
            }
            return running == k_services;
        },
        60s, "every service running");
    CHECK_MESSAGE(most <= bound, "pkitd held " << most << " fds during start-up, bound " << bound);
    CHECK(pkitd.stop(60s) == 0);
}
