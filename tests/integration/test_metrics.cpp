// /metrics (SPEC §11): what promtool accepts, with every family of the contract, and
// counters that grow with runs and restarts and reset when a reload gives a service
// fresh counters; every process of a run counted, and no /proc file kept open.

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "tests/integration/harness.hpp"
#include "tests/integration/http_client.hpp"

using namespace pkit::itest;

namespace {

// The value of the sample line starting with `series` ("name{labels}"), or -1.
double sample(const std::string& text, const std::string& series) {
    std::size_t at = 0;
    while ((at = text.find(series + " ", at)) != std::string::npos) {
        if (at == 0 || text[at - 1] == '\n') {
            return std::stod(text.substr(at + series.size() + 1));
        }
        at += series.size();
    }
    return -1;
}

}  // namespace

TEST_CASE(
    "metrics: a scrape of groups, probes, a crash loop and a failed service passes promtool with "
    "every family") {
    if (!have_program("promtool")) {
        PKIT_SKIP("promtool is not installed");
    }
    TempDir dir;
    int port = with_http(dir, "[groups.backend]\nmembers = [\"db\", \"api\"]\n\n");
    dir.service("db", sh_command("exec sleep 1000") +
                          "[health]\nexec = [\"true\"]\ninterval = \"100ms\"\n");
    dir.service(
        "api", sh_command("exec sleep 1000") + "[ready]\nexec = [\"true\"]\ninterval = \"50ms\"\n");
    dir.service("loop", sh_command("exit 3") + restart_table("always", "50ms", 1.0));
    dir.service("broken", sh_command("exit 2") + restart_table("on_crash", "10ms", 1.0, 0));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "broken", state_is("failed"), 10s, "broken fails");
    wait_status(client, "loop", run_at_least(3), 10s, "loop crashes a few times");
    wait_status(
        client, "db", [](const json& s) { return s["health"]["status"] == "healthy"; }, 10s,
        "db healthy");

    HttpReply scrape = http_get(port, "/metrics");
    REQUIRE(scrape.status == 200);
    CHECK(scrape.header("content-type") == "text/plain; version=0.0.4");
    write_file(dir.file("scrape.txt"), scrape.body);
    CommandResult check =
        run_command({"/bin/sh", "-c", "promtool check metrics < " + dir.file("scrape.txt")});
    CHECK_MESSAGE(check.exit_code == 0, check.all() << "\n" << scrape.body.substr(0, 4000));

    const std::string& m = scrape.body;
    for (const char* family : {"pkit_build_info gauge",
                               "pkit_start_time_seconds gauge",
                               "pkit_ready gauge",
                               "pkit_orphans_reaped_total counter",
                               "pkit_storm_pauses_total counter",
                               "pkit_service_state gauge",
                               "pkit_service_ready gauge",
                               "pkit_service_healthy gauge",
                               "pkit_service_runs_total counter",
                               "pkit_service_restarts_total counter",
                               "pkit_service_crashes_total counter",
                               "pkit_service_liveness_kills_total counter",
                               "pkit_service_oom_kills_total counter",
                               "pkit_service_storm_pauses_total counter",
                               "pkit_service_last_exit_code gauge",
                               "pkit_service_start_time_seconds gauge",
                               "pkit_service_processes gauge",
                               "pkit_service_cpu_seconds_total counter",
                               "pkit_service_resident_memory_bytes gauge",
                               "process_resident_memory_bytes gauge",
                               "process_cpu_seconds_total counter",
                               "process_open_fds gauge",
                               "process_start_time_seconds gauge"}) {
        CHECK_MESSAGE(m.find(std::string("# TYPE ") + family + "\n") != std::string::npos, family);
    }
    CHECK(sample(m, "pkit_ready") == 0);  // broken failed
    // pkitd's own process: what /proc says of it.
    CHECK(sample(m, "process_resident_memory_bytes") > 1 << 20);
    CHECK(sample(m, "process_cpu_seconds_total") >= 0);
    CHECK(sample(m, "process_open_fds") >= 5);  // stdio, the control socket, the listener
    CHECK(sample(m, "process_start_time_seconds") == sample(m, "pkit_start_time_seconds"));
    // Help texts stand alone: they cite no document the user does not have.
    CHECK(m.find("SPEC") == std::string::npos);
    CHECK(sample(m, "pkit_service_state{service=\"broken\",state=\"failed\"}") == 1);
    CHECK(sample(m, "pkit_service_state{service=\"broken\",state=\"running\"}") == 0);
    CHECK(sample(m, "pkit_service_state{service=\"db\",group=\"backend\",state=\"running\"}") == 1);
    CHECK(sample(m, "pkit_service_healthy{service=\"db\",group=\"backend\"}") == 1);
    CHECK(m.find("pkit_service_healthy{service=\"api\"") == std::string::npos);  // no probe
    CHECK(sample(m, "pkit_service_last_exit_code{service=\"broken\"}") == 2);
    CHECK(sample(m, "pkit_service_crashes_total{service=\"broken\"}") == 1);
    CHECK(sample(m, "pkit_service_processes{service=\"api\",group=\"backend\"}") == 1);
    CHECK(sample(m, "pkit_service_resident_memory_bytes{service=\"api\",group=\"backend\"}") > 0);
    CHECK(std::regex_search(m, std::regex("pkit_build_info\\{version=\"[^\"]+\"\\} 1\n")));
    // A state series a state: eleven, with `scheduled` and `paused`.
    std::size_t states = 0;
    for (std::size_t at = 0;
         (at = m.find("pkit_service_state{service=\"loop\"", at)) != std::string::npos; ++at) {
        ++states;
    }
    CHECK(states == 11);
    CHECK(m.find("pkit_service_state{service=\"loop\",state=\"paused\"} 0") != std::string::npos);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE(
    "metrics: counters grow with runs and restarts, and a reload that changes the service resets "
    "them") {
    TempDir dir;
    int port = with_http(dir);
    dir.service("loop", sh_command("exit 3") + restart_table("always", "100ms", 1.0));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "loop", run_at_least(2), 10s, "two runs");
    std::string first = http_get(port, "/metrics").body;
    const double runs1 = sample(first, "pkit_service_runs_total{service=\"loop\"}");
    const double restarts1 = sample(first, "pkit_service_restarts_total{service=\"loop\"}");
    CHECK(runs1 >= 2);
    CHECK(restarts1 >= 1);
    wait_status(client, "loop", run_at_least(static_cast<int>(runs1) + 2), 10s, "two more runs");
    // A body is served again for 1 s (pkitd(8)): the next render shows the new runs.
    std::string second;
    wait_for(
        [&] {
            second = http_get(port, "/metrics").body;
            return sample(second, "pkit_service_runs_total{service=\"loop\"}") >= runs1 + 2;
        },
        10s, "a scrape after the cache's second shows the runs");
    CHECK(sample(second, "pkit_service_runs_total{service=\"loop\"}") >= runs1 + 2);
    // Two more runs are two more restarts, less one when the first scrape fell in a
    // backoff (the restart already counted, its run not begun).
    CHECK(sample(second, "pkit_service_restarts_total{service=\"loop\"}") >= restarts1 + 1);
    CHECK(sample(second, "pkit_service_crashes_total{service=\"loop\"}") >= 3);

    // A changed definition: fresh counters, so the restarts counter starts over (a
    // reload drops the cached body at once).
    dir.service("loop", sh_command("exec sleep 1000"));
    CHECK(client.command("reload")["ok"] == true);
    wait_status(client, "loop", state_is("running"), 10s, "the new loop runs");
    std::string third = http_get(port, "/metrics").body;
    CHECK(sample(third, "pkit_service_restarts_total{service=\"loop\"}") == 0);
    CHECK(sample(third, "pkit_service_crashes_total{service=\"loop\"}") == 0);
    CHECK(sample(third, "pkit_ready") == 1);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("metrics: every process of a run counts, whichever thread of the /proc pass reads it") {
    // The pass is split among pool threads by pid (odd and even with two): the service
    // starts `sleep`s until it has one of each parity, and all of them count.
    TempDir dir;
    int port = with_http(dir);
    dir.service("fan", sh_command("odd=0; even=0; n=0; "
                                  "while [ $odd = 0 ] || [ $even = 0 ]; do "
                                  "sleep 1000 & n=$((n+1)); "
                                  "if [ $(($! % 2)) = 1 ]; then odd=1; else even=1; fi; done; "
                                  "echo $n > " +
                                  dir.file("sleeps.tmp") + "; mv " + dir.file("sleeps.tmp") + " " +
                                  dir.file("sleeps") + "; wait"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    wait_file(dir.file("sleeps"));
    const int processes = std::stoi(read_file(dir.file("sleeps"))) + 1;  // and the shell
    double counted = -1;
    wait_for(
        [&] {
            counted =
                sample(http_get(port, "/metrics").body, "pkit_service_processes{service=\"fan\"}");
            return counted == processes;
        },
        10s, "every process counted",
        [&] { return std::to_string(counted) + " of " + std::to_string(processes); });
    // `status` with resources reads the same way. Neither keeps a /proc/PID/stat open
    // past its pass: each would pin a page of kernel memory and a descriptor.
    Client client = pkitd.client();
    json reply = client.request({{"cmd", "status"}, {"services", {"fan"}}, {"resources", true}});
    CHECK(reply["result"]["services"][0]["resources"]["processes"] == processes);
    std::vector<std::string> stat_files;
    const std::string fds = "/proc/" + std::to_string(pkitd.target_pid()) + "/fd";
    for (const auto& entry : std::filesystem::directory_iterator(fds)) {
        std::error_code error;
        std::string target = std::filesystem::read_symlink(entry.path(), error).string();
        if (target.starts_with("/proc/") && target.ends_with("/stat")) {
            stat_files.push_back(target);
        }
    }
    std::string kept;
    for (const std::string& file : stat_files) {
        kept += " " + file;
    }
    CHECK_MESSAGE(stat_files.empty(), "pkitd keeps open:" << kept);
    CHECK(pkitd.stop() == 0);
}
