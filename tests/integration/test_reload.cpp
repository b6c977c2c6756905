// Reload (SPEC §8): new services start, removed ones stop, changed ones restart with
// fresh counters, unchanged ones are not touched; an invalid tree changes nothing.

#include <signal.h>
#include <sys/stat.h>
#include <time.h>

#include <algorithm>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

std::vector<std::string> names(const json& list) {
    std::vector<std::string> out;
    for (const auto& n : list) {
        out.push_back(n.get<std::string>());
    }
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

TEST_CASE("reload starts, stops, restarts and leaves alone as the tree says") {
    TempDir dir;
    dir.service("keep", sh_command("exec sleep 1000"));
    dir.service("change", sh_command("exec sleep 1000"));
    dir.service("remove", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json keep = wait_status(client, "keep", state_is("running"), 5s, "running");
    json change = wait_status(client, "change", state_is("running"), 5s, "running");
    json remove = wait_status(client, "remove", state_is("running"), 5s, "running");

    // A comment is no change; a new argument is.
    dir.service("keep", "# only a comment\n" + sh_command("exec sleep 1000"));
    dir.service("change", sh_command("exec sleep 1001"));
    fs::remove(dir.path() / "services" / "remove.toml");
    dir.service("add", sh_command("exec sleep 1000"));

    SUBCASE("pkitctl reload") {
        json reply = client.command("reload");
        REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
        CHECK(names(reply["result"]["added"]) == std::vector<std::string>{"add"});
        CHECK(names(reply["result"]["removed"]) == std::vector<std::string>{"remove"});
        CHECK(names(reply["result"]["changed"]) == std::vector<std::string>{"change"});
        CHECK(reply["result"]["unchanged"] == 1);
    }
    SUBCASE("SIGHUP") {
        pkitd.signal(SIGHUP);
        // The signal is handled asynchronously: "add" exists once it has been.
        wait_for(
            [&] {
                return client.request({{"cmd", "status"}, {"services", {"add"}}})["ok"] == true;
            },
            5s, "the SIGHUP reload adds \"add\"");
    }
    wait_status(client, "add", state_is("running"), 5s, "the added service runs");
    json changed = wait_status(
        client, "change",
        [](const json& s) { return s.value("run", 0) == 2 && s["state"] == "running"; }, 5s,
        "the changed service restarted");
    CHECK(changed["restarts"] == 0);
    CHECK(status(client, "keep")["pid"] == keep["pid"]);
    wait_for([&] { return !pid_alive(remove["pid"].get<pid_t>()); }, 5s,
             "the removed service stops");
    json reply = client.request({{"cmd", "status"}, {"services", {"remove"}}});
    CHECK(reply["ok"] == false);
    CHECK(reply["error"]["code"] == "unknown_service");
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("reload of an invalid tree changes nothing and reports the errors") {
    TempDir dir;
    dir.service("svc", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json before = wait_status(client, "svc", state_is("running"), 5s, "running");

    dir.service("svc", sh_command("exec sleep 1001") + "bogus_key = 1\n");
    json reply = client.command("reload");
    CHECK(reply["ok"] == false);
    CHECK(reply["error"]["code"] == "invalid_config");
    CHECK(reply["error"]["message"].get<std::string>().find("svc.toml") != std::string::npos);
    json after = status(client, "svc");
    CHECK(after["pid"] == before["pid"]);
    CHECK(after["run"] == 1);
    CHECK(run_ctl({"--socket", pkitd.socket(), "reload"}).exit_code == 1);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("the first reload after start reads only the files that changed") {
    TempDir dir;
    for (int i = 0; i < 20; ++i) {
        dir.service("svc" + std::to_string(i), sh_command("exec sleep 1000"));
    }
    // A file is trusted unchanged only when its ctime was a little older than the load
    // that read it (k_racy_seconds): pkitd starts once that has passed.
    const std::string newest = (dir.path() / "services" / "svc19.toml").string();
    wait_for(
        [&] {
            struct stat info {};
            timespec now{};
            ::clock_gettime(CLOCK_REALTIME, &now);
            return ::stat(newest.c_str(), &info) == 0 && now.tv_sec - info.st_ctim.tv_sec >= 3;
        },
        10s, "the service files are 3 s old");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "svc0", state_is("running"), 5s, "running");

    dir.service("svc7", sh_command("exec sleep 1001"));
    json changed = reload(client);
    CHECK(changed["changed"] == json::array({"svc7"}));
    wait_for(
        [&] {
            return pkitd.log().find("reload: 1 of 20 service files read again") !=
                   std::string::npos;
        },
        5s, "the log of a reload that read one file", [&] { return pkitd.log(); });
    CHECK(pkitd.stop() == 0);
}
