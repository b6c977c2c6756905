// Resources of a run (SPEC §5 `resources`, §10 status --resources): its process group's
// processes, CPU seconds and resident memory, read from /proc when asked.

#include <regex>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

json resources_of(Client& client, const std::string& name) {
    json reply = client.request({{"cmd", "status"}, {"services", {name}}, {"resources", true}});
    REQUIRE_MESSAGE(reply.value("ok", false), reply.dump());
    return reply["result"]["services"][0]["resources"];
}

}  // namespace

TEST_CASE(
    "resources: a service that forks 3 children and holds 50 MiB shows 4 processes and its "
    "memory") {
    const std::string py = python3();
    if (py.empty()) {
        PKIT_SKIP("python3 is not available");
    }
    TempDir dir;
    // The children sleep; the parent touches every page of 50 MiB, then says so.
    const std::string script =
        "import os, time\n"
        "for _ in range(3):\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(1000)\n"
        "        os._exit(0)\n"
        "block = bytearray(50 * 1024 * 1024)\n"
        "for i in range(0, len(block), 4096):\n"
        "    block[i] = 1\n"
        "open(" +
        json(dir.file("allocated")).dump() +
        ", 'w').close()\n"
        "time.sleep(1000)\n";
    write_file(dir.file("hold.py"), script);
    dir.service("hold", "command = " + toml_array({py, dir.file("hold.py")}) + "\n");
    dir.service("idle", "autostart = false\n" + sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    wait_file(dir.file("allocated"));
    Client client = pkitd.client();
    json used;
    wait_for(
        [&] {
            used = resources_of(client, "hold");
            return used.is_object() && used["processes"] == 4 &&
                   used["rss_bytes"].get<std::int64_t>() >= 50LL * 1024 * 1024;
        },
        10s, "4 processes and 50 MiB", [&] { return used.dump(); });
    CHECK(used["cpu_seconds"].get<double>() >= 0.0);
    // Without a run: null; not asked: absent.
    CHECK(resources_of(client, "idle").is_null());
    CHECK_FALSE(status(client, "hold").contains("resources"));

    CommandResult table = run_ctl({"--socket", pkitd.socket(), "status", "--resources"});
    CHECK(table.exit_code == 0);
    CHECK(table.out.find("PROCS") != std::string::npos);
    CHECK(table.out.find("MEM") != std::string::npos);
    CHECK(table.out.find("CPU") != std::string::npos);
    CHECK(std::regex_search(table.out, std::regex("hold .* 4 +[0-9.]+ +[5-9][0-9]M\n")));
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("resources: a CPU-burning service shows cpu_seconds growing") {
    TempDir dir;
    dir.service("burn", sh_command("while :; do :; done"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "burn", state_is("running"), 10s, "burn runs");
    double first = -1;
    wait_for(
        [&] {
            json used = resources_of(client, "burn");
            first = used.is_object() ? used["cpu_seconds"].get<double>() : -1;
            return first > 0.05;
        },
        20s, "some CPU used", [&] { return std::to_string(first); });
    double later = first;
    wait_for(
        [&] {
            later = resources_of(client, "burn")["cpu_seconds"].get<double>();
            return later > first + 0.1;
        },
        30s, "cpu_seconds growing", [&] { return std::to_string(later); });
    CHECK(pkitd.stop() == 0);
}

TEST_CASE(
    "resources: status --resources from many clients at once: one pass serves those waiting, "
    "the next those who asked while it ran") {
    TempDir dir;
    dir.service("web", sh_command("exec sleep 1000"));
    dir.service("api", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client first = pkitd.client();
    wait_running(first, "web");
    wait_running(first, "api");
    // Sent without waiting for any reply: some are read while a pass runs and wait for
    // the next; each reply names its own service, with that run's figures.
    std::vector<Client> clients;
    for (int k = 0; k < 8; ++k) {
        clients.push_back(pkitd.client());
    }
    for (int k = 0; k < 8; ++k) {
        const std::string name = k % 2 == 0 ? "web" : "api";
        clients[k].send_raw(
            json({{"id", k}, {"cmd", "status"}, {"services", {name}}, {"resources", true}}).dump() +
            "\n");
    }
    CHECK(first.request({{"cmd", "ping"}}).value("ok", false));
    const auto deadline = Clock::now() + 10s;
    for (int k = 0; k < 8; ++k) {
        auto line = clients[k].read_line(deadline);
        REQUIRE_MESSAGE(line, "client " << k << " got no reply");
        json reply = json::parse(*line);
        REQUIRE_MESSAGE(reply.value("ok", false), reply.dump());
        CHECK(reply["id"] == k);
        const json& row = reply["result"]["services"][0];
        CHECK(reply["result"]["services"].size() == 1);
        CHECK(row["name"] == (k % 2 == 0 ? "web" : "api"));
        CHECK_MESSAGE(row["resources"]["processes"] == 1, row.dump());
        CHECK(row["resources"]["rss_bytes"].get<std::int64_t>() > 0);
    }
    CHECK(pkitd.stop() == 0);
}
