// The daemon-wide storm guard (SPEC §6 [storm] in pkitd.toml) under a crash loop: 50
// services crash with no backoff at all, the guard holds every pending restart, and
// pkitd stays cheap and responsive throughout.

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

constexpr int k_services = 50;

// utime + stime of `pid` in seconds, from /proc/PID/stat; -1 when unreadable.
double cpu_seconds(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto paren = text.rfind(')');
    if (paren == std::string::npos) {
        return -1;
    }
    // After "PID (comm)": state is field 3; utime and stime are fields 14 and 15.
    std::istringstream fields(text.substr(paren + 2));
    std::string field;
    double ticks = 0;
    for (int i = 3; i <= 15 && fields >> field; ++i) {
        if (i >= 14) {
            ticks += std::stod(field);
        }
    }
    return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

double percentile(std::vector<double> values, double p) {
    std::sort(values.begin(), values.end());
    return values[static_cast<std::size_t>(p * static_cast<double>(values.size() - 1))];
}

}  // namespace

TEST_CASE("storm: the daemon-wide guard keeps 50 crash-looping services cheap and responsive") {
    TempDir dir;
    dir.daemon_config("[storm]\npause = \"5s\"\nthreshold = 20\ndecay = \"60s\"\n");
    for (int i = 0; i < k_services; ++i) {
        char name[16];
        std::snprintf(name, sizeof name, "crash%02d", i);
        dir.service(name, "command = [\"/bin/false\"]\n" + restart_table("on_crash", "0"));
    }
    // CPU is counted from pkitd's start: the window holds the first burst of 50
    // launches, the guard tripping, the pause, and the burst when the pause ends.
    const auto start = Clock::now();
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();

    std::vector<double> ctl_ms;  // the whole `pkitctl status`, its own start included
    std::vector<double> raw_ms;  // pkitd's answer alone: the status round trip
    int storm_paused_seen = 0;
    long runs = 0;
    while (Clock::now() - start < 6s) {
        auto asked = Clock::now();
        const auto ctl = run_ctl({"--socket", pkitd.socket(), "status"}, 5s);
        ctl_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - asked).count());
        REQUIRE_MESSAGE(ctl.exit_code == 0, ctl.all());
        CHECK(ctl.out.find("crash49") != std::string::npos);
        asked = Clock::now();
        json reply = client.request({{"cmd", "status"}}, 5s);
        raw_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - asked).count());
        REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
        runs = 0;
        for (const auto& s : reply["result"]["services"]) {
            storm_paused_seen += s["state"] == "storm_pause" ? 1 : 0;
            runs += s["run"].get<long>();
        }
        std::this_thread::sleep_for(200ms);
    }
    const double wall = seconds_since(start);
    const double cpu = cpu_seconds(pkitd.target_pid());
    const double cpu_percent = 100.0 * cpu / wall;

    json daemon = daemon_status(client);
    MESSAGE("pkitd CPU " << cpu << " s = " << cpu_percent << "% of one core over " << wall << " s, "
                         << runs << " runs; pkitctl status median " << percentile(ctl_ms, 0.5)
                         << " ms, p90 " << percentile(ctl_ms, 0.9) << " ms, max "
                         << percentile(ctl_ms, 1.0) << " ms; pkitd's answer median "
                         << percentile(raw_ms, 0.5) << " ms, max " << percentile(raw_ms, 1.0)
                         << " ms; " << raw_ms.size() << " samples; daemon storm_pauses "
                         << daemon["storm_pauses"]);
    CHECK(cpu >= 0);
    // The guard held the loop: without it, 50 services with no backoff would make
    // thousands of runs in 6 s.
    CHECK(runs < 1000);
    CHECK(cpu_percent < 50.0);
    CHECK(daemon["storm_pauses"].get<int>() >= 1);
    CHECK(storm_paused_seen > 0);
    CHECK(raw_ms.size() >= 15);
    // pkitd answers within 100 ms throughout, but for one sample that a loaded shared
    // machine may delay (the case's own thread can be descheduled too), within 250;
    // pkitctl, whose own start a loaded machine stretches, within 100 ms typically.
    const auto slow =
        std::count_if(raw_ms.begin(), raw_ms.end(), [](double ms) { return ms >= 100.0; });
    CHECK(percentile(raw_ms, 0.5) < 50.0);
    CHECK(slow <= 1);
    CHECK(percentile(raw_ms, 1.0) < 250.0);
    CHECK(percentile(ctl_ms, 0.5) < 100.0);
    CHECK(pkitd.stop() == 0);
}
