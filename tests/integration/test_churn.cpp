// Services added and removed again and again (issue 44): `scale` up and down, files
// that come and go. A removed service's slot goes to a service added later, once its
// runs have ended, so pkitd's per-service tables stay at their largest size. Seen from
// outside by SOCKET.runs, one 32-byte record a slot (pkitd(8) "After pkitd itself was
// killed"), and each service reused a slot for still runs as itself: its own name, a
// first run, only its own output.

#include <filesystem>

#include "tests/integration/harness.hpp"
#include "tests/integration/harness_proc.hpp"

using namespace pkit::itest;

namespace churn {

constexpr int k_record_bytes = 32;

std::string sleeper_toml(const std::string& more = "") {
    return "command = [\"/bin/sh\", \"-c\", \"echo I am $$PKIT_SERVICE; exec sleep 1000\"]\n" +
           more + "[output]\nforward = \"none\"\n";
}

std::uintmax_t runs_file_bytes(const Daemon& pkitd) {
    std::error_code error;
    auto size = std::filesystem::file_size(pkitd.socket() + ".runs", error);
    return error ? 0 : size;
}

// Waits until pkitd has exactly `count` children: the removed services' runs have
// ended (and only then can their slots go to others).
void wait_children(const Daemon& pkitd, std::size_t count, const std::string& what) {
    wait_for([&] { return children_of(pkitd.target_pid()).size() == count; }, 30s, what);
}

// Every service `names` lists runs its first run and has printed only its own name.
void each_runs_as_itself(const Daemon& pkitd, Client& client,
                         const std::vector<std::string>& names) {
    for (const std::string& name : names) {
        json row = wait_running(client, name);
        CHECK_MESSAGE(row["run"] == 1, name);
        wait_for(
            [&] {
                return ctl(pkitd, {"logs", name}).out.find("I am") != std::string::npos;
            },
            10s, name + " printed its line");
        const std::string logs = ctl(pkitd, {"logs", name}).out;
        CHECK_MESSAGE(nonempty_lines(logs).size() == 1, name << ": " << logs);
        CHECK_MESSAGE(logs.find("I am " + name + "\n") != std::string::npos, name << ": " << logs);
    }
}

}  // namespace churn

using namespace churn;

TEST_CASE("churn: ten cycles of scale 40 and scale 1 leave the tables at 40 slots") {
    TempDir dir;
    dir.service("web", sleeper_toml("instances = 2\n"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_running(client, "web@2");
    REQUIRE(ctl(pkitd, {"scale", "web", "1"}).exit_code == 0);
    wait_children(pkitd, 1, "web@2 ended");

    std::vector<std::string> all;
    for (int i = 1; i <= 40; ++i) {
        all.push_back("web@" + std::to_string(i));
    }
    for (int cycle = 0; cycle < 10; ++cycle) {
        REQUIRE(ctl(pkitd, {"scale", "web", "40"}).exit_code == 0);
        wait_children(pkitd, 40, "40 instances running");
        REQUIRE(ctl(pkitd, {"scale", "web", "1"}).exit_code == 0);
        wait_children(pkitd, 1, "39 instances ended");
    }
    INFO("SOCKET.runs: " << runs_file_bytes(pkitd) << " bytes");
    CHECK(runs_file_bytes(pkitd) <= 40 * k_record_bytes);

    REQUIRE(ctl(pkitd, {"scale", "web", "40"}).exit_code == 0);
    wait_children(pkitd, 40, "40 instances running");
    CHECK(runs_file_bytes(pkitd) <= 40 * k_record_bytes);
    each_runs_as_itself(pkitd, client, all);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("churn: five reloads adding and removing 20 files leave the tables at 21 slots") {
    TempDir dir;
    dir.service("base", sleeper_toml());
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_running(client, "base");

    std::vector<std::string> added;
    for (int i = 1; i <= 20; ++i) {
        added.push_back("f" + std::to_string(i));
    }
    for (int cycle = 0; cycle < 5; ++cycle) {
        // Other names each cycle: a slot goes to whichever service comes.
        for (const std::string& name : added) {
            dir.service(name + "c" + std::to_string(cycle), sleeper_toml());
        }
        json up = reload(client);
        CHECK(up["added"].size() == 20);
        wait_children(pkitd, 21, "21 services running");
        for (const std::string& name : added) {
            std::filesystem::remove(dir.path() / "services" /
                                    (name + "c" + std::to_string(cycle) + ".toml"));
        }
        json down = reload(client);
        CHECK(down["removed"].size() == 20);
        wait_children(pkitd, 1, "20 services ended");
    }
    for (const std::string& name : added) {
        dir.service(name, sleeper_toml());
    }
    reload(client);
    wait_children(pkitd, 21, "21 services running");
    INFO("SOCKET.runs: " << runs_file_bytes(pkitd) << " bytes");
    CHECK(runs_file_bytes(pkitd) <= 21 * k_record_bytes);
    each_runs_as_itself(pkitd, client, added);
    CHECK(pkitd.stop() == 0);
}
