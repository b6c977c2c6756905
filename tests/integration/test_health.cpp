// Liveness probes (SPEC §2 [health], §3 liveness): `failures` failed probes in a row
// force-stop the run, which counts as a crash (`liveness_kills`, killed_by =
// "liveness") and is restarted; a healthy run is left alone.

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sstream>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// pkitd's "svc: liveness probe failed" log lines so far.
int failed_probe_lines(const Daemon& pkitd) {
    std::istringstream in(pkitd.log());
    int count = 0;
    for (std::string line; std::getline(in, line);) {
        count += line.find("svc: liveness probe failed") != std::string::npos ? 1 : 0;
    }
    return count;
}

}  // namespace

TEST_CASE("health exec probe: failing probes kill the run after exactly `failures`") {
    TempDir dir;
    const std::string flag = dir.file("healthy");
    write_file(flag, "");
    // stop_when is not consulted for a liveness kill: SIGTERM would otherwise match.
    dir.service("svc", sh_command("exec sleep 1000") + restart_table("on_crash", "2s", 1.0) +
                           "[stop_when]\nsignals = [\"SIGTERM\"]\n" +
                           "[health]\nexec = [\"test\", \"-f\", " + toml_str(flag) +
                           "]\ninterval = \"200ms\"\nfailures = 3\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json s = wait_status(
        client, "svc", [](const json& st) { return st["health"].value("status", "") == "healthy"; },
        5s, "healthy");
    const pid_t first = s["pid"].get<pid_t>();
    CHECK(failed_probe_lines(pkitd) == 0);

    fs::remove(flag);
    // The restart waits 2 s: the killed run's failures are all in the log by then.
    s = wait_status(client, "svc", liveness_killed(1), 5s, "a liveness kill");
    CHECK(failed_probe_lines(pkitd) == 3);
    CHECK(last_exit(s)["killed_by"] == "liveness");
    CHECK(last_exit(s)["signal"] == "SIGTERM");
    CHECK(s["stopped"].is_null());
    CHECK_FALSE(pid_alive(first));

    write_file(flag, "");
    s = wait_status(
        client, "svc",
        [](const json& st) {
            return st["run"] == 2 && st["health"].value("status", "") == "healthy";
        },
        10s, "run 2, healthy");
    CHECK(s["restarts"] == 1);
    CHECK(s["liveness_kills"] == 1);
    CHECK(s["health"]["failures"] == 0);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("health probe: a healthy run keeps its PID over 10 intervals") {
    TempDir dir;
    const std::string probes = dir.file("probes");
    dir.service("svc", sh_command("exec sleep 1000") + "[health]\nexec = [\"/bin/sh\", \"-c\", " +
                           toml_str("echo probe >> " + probes) +
                           "]\ninterval = \"200ms\"\nfailures = 1\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json first = wait_status(client, "svc", state_is("running"), 5s, "running");

    wait_for([&] { return read_lines(probes).size() >= 10; }, 10s, "10 probes",
             [&] { return std::to_string(read_lines(probes).size()); });
    json s = status(client, "svc");
    CHECK(s["pid"] == first["pid"]);
    CHECK(s["run"] == 1);
    CHECK(s["liveness_kills"] == 0);
    CHECK(s["health"]["status"] == "healthy");
    CHECK(s["health"]["failures"] == 0);
    CHECK(pid_alive(first["pid"].get<pid_t>()));
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("health tcp probe: nothing listening is a failure, and a listener is healthy") {
    TempDir dir;
    const int port = unused_port();
    const std::string target = "127.0.0.1:" + std::to_string(port);
    SUBCASE("nothing listens: the run is killed after 2 probes and restarted") {
        dir.service("svc", sh_command("exec sleep 1000") + restart_table("on_crash", "100ms") +
                               "[health]\ntcp = " + toml_str(target) +
                               "\ninterval = \"200ms\"\nfailures = 2\n");
        Daemon pkitd(dir);
        pkitd.wait_ready();
        Client client = pkitd.client();
        json s = wait_status(client, "svc", run_at_least(2), 10s, "a restart");
        CHECK(s["liveness_kills"].get<int>() >= 1);
        CHECK(last_exit(s)["killed_by"] == "liveness");
        CHECK(pkitd.stop() == 0);
    }
    SUBCASE("the service listens: healthy, no kill") {
        if (!have_program("socat")) {
            PKIT_SKIP("socat is not installed");
        }
        // Each accepted connection leaves a line: the probes are seen to happen. The
        // run is ready once socat listens: liveness probes start only then, so a socat
        // slow to bind on a loaded machine is not a failed liveness probe.
        const std::string probes = dir.file("probes");
        dir.service("svc", "command = [\"socat\", \"TCP-LISTEN:" + std::to_string(port) +
                               ",bind=127.0.0.1,reuseaddr,fork\", " +
                               toml_str("SYSTEM:echo probe >> " + probes) + "]\n" +
                               "[ready]\ntcp = " + toml_str(target) + "\ntimeout = \"15s\"\n" +
                               "[health]\ntcp = " + toml_str(target) +
                               "\ninterval = \"200ms\"\nfailures = 2\n");
        Daemon pkitd(dir);
        pkitd.wait_ready();
        Client client = pkitd.client();
        json first = wait_status(client, "svc", state_is("running"), 15s, "running");
        // The ready probe's connection leaves a line too: 6 lines are 5 liveness probes.
        wait_for([&] { return read_lines(probes).size() >= 6; }, 10s, "5 liveness probes",
                 [&] { return std::to_string(read_lines(probes).size()); });
        json s = status(client, "svc");
        CHECK(s["pid"] == first["pid"]);
        CHECK(s["health"]["status"] == "healthy");
        CHECK(s["liveness_kills"] == 0);
        CHECK(failed_probe_lines(pkitd) == 0);
        CHECK(pkitd.stop() == 0);
    }
}

TEST_CASE("health exec probe: a probe past its timeout fails and its whole group is killed") {
    TempDir dir;
    // The probe leaves a background child in its process group, then hangs.
    dir.service("svc", sh_command("exec sleep 1000") + restart_table("never", "50ms") +
                           "[health]\nexec = [\"/bin/sh\", \"-c\", \"sleep 3001 & exec sleep "
                           "3002\"]\ninterval = \"200ms\"\ntimeout = \"300ms\"\nfailures = 2\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json s = wait_status(client, "svc", state_is("failed"), 10s, "a liveness kill");
    // Under policy never, a liveness kill ends supervision as unhealthy.
    CHECK(s["stopped"] == "unhealthy");
    CHECK(s["liveness_kills"] == 1);
    CHECK(last_exit(s)["killed_by"] == "liveness");
    CHECK(failed_probe_lines(pkitd) == 2);

    auto probe_leftovers = [&] {
        auto procs = marker_processes(dir.str());
        std::erase_if(procs, [](const ProcInfo& p) {
            return p.cmdline.find("sleep 300") == std::string::npos;
        });
        return procs;
    };
    wait_for([&] { return probe_leftovers().empty(); }, 5s, "no probe process left",
             [&] { return describe(probe_leftovers()); });
    CHECK(pkitd.stop() == 0);
}
