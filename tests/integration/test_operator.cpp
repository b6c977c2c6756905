// Operator commands over the socket (SPEC §9): restart, signal (main PID or group),
// explain, and the [stop] settings an operator stop honours (signal, mode).

#include <algorithm>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

json command_on(Client& client, const std::string& cmd, json args = json::object()) {
    args["cmd"] = cmd;
    json reply = client.request(args);
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    return reply["result"];
}

std::string loop_forever() {
    return "while :; do sleep 0.05; done";
}

}  // namespace

TEST_CASE("an operator restart gives a fresh run and is not counted in restarts") {
    TempDir dir;
    dir.service("svc", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json before = wait_status(client, "svc", state_is("running"), 5s, "running");

    json result = command_on(client, "restart", {{"services", {"svc"}}});
    REQUIRE(result["services"].size() == 1);
    json after = wait_status(client, "svc", state_is("running"), 5s, "running again");
    CHECK(after["run"] == 2);
    CHECK(after["pid"] != before["pid"]);
    CHECK(after["restarts"] == 0);
    CHECK_FALSE(pid_alive(before["pid"].get<pid_t>()));
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("signal reaches the main PID only, or the whole group with group = true") {
    TempDir dir;
    const std::string log = dir.file("signals");
    dir.service("svc",
                sh_command("trap 'echo main >> " + log + "' USR1; (trap 'echo child >> " + log +
                           "' USR1; touch " + dir.file("child") + "; " + loop_forever() +
                           ") & touch " + dir.file("main") + "; " + loop_forever()));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_file(dir.file("main"));
    wait_file(dir.file("child"));

    command_on(client, "signal", {{"services", {"svc"}}, {"signal", "USR1"}});
    wait_for([&] { return read_lines(log).size() == 1; }, 5s, "the main process's trap",
             [&] { return read_file(log); });
    command_on(client, "signal", {{"services", {"svc"}}, {"signal", "SIGUSR1"}, {"group", true}});
    wait_for([&] { return read_lines(log).size() == 3; }, 5s, "both traps",
             [&] { return read_file(log); });
    // Had the first signal reached the child, "child" would be there twice.
    auto lines = read_lines(log);
    CHECK(std::count(lines.begin(), lines.end(), "main") == 2);
    CHECK(std::count(lines.begin(), lines.end(), "child") == 1);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("an operator stop sends stop.signal and in process mode spares the group") {
    TempDir dir;
    SUBCASE("stop.signal = INT") {
        const std::string log = dir.file("signals");
        dir.service("svc", sh_command("trap 'echo int >> " + log + "; exit 0' INT; trap 'echo " +
                                      "term >> " + log + "; exit 0' TERM; touch " +
                                      dir.file("armed") + "; " + loop_forever()) +
                               "[stop]\nsignal = \"INT\"\n");
        Daemon pkitd(dir);
        pkitd.wait_ready();
        Client client = pkitd.client();
        wait_file(dir.file("armed"));
        command_on(client, "stop", {{"services", {"svc"}}});
        CHECK(read_lines(log) == std::vector<std::string>{"int"});
        json s = status(client, "svc");
        CHECK(s["state"] == "stopped");
        CHECK(last_exit(s)["code"] == 0);
        CHECK(pkitd.stop() == 0);
    }
    SUBCASE("stop.mode = process leaves the rest of the group alone") {
        const std::string pid_file = dir.file("background.pid");
        dir.service("svc", sh_command("sleep 1000 & echo $! > " + pid_file + "; wait") +
                               "[stop]\nmode = \"process\"\n");
        Daemon pkitd(dir);
        pkitd.wait_ready();
        Client client = pkitd.client();
        wait_for([&] { return !read_lines(pid_file).empty(); }, 5s, "the background pid");
        const pid_t background = std::stoi(read_lines(pid_file).front());
        command_on(client, "stop", {{"services", {"svc"}}});
        CHECK(status(client, "svc")["state"] == "stopped");
        CHECK(pid_alive(background));
        CHECK(pkitd.stop() == 0);
    }
}

TEST_CASE("explain says in words why a service is in its state") {
    TempDir dir;
    dir.service("svc", sh_command("exit 1") + restart_table("on_crash", "50ms", 1.0, 2));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "svc", state_is("failed"), 5s, "restarts exhausted");

    json result = command_on(client, "explain", {{"service", "svc"}});
    REQUIRE(result["text"].is_string());
    CHECK_FALSE(result["text"].get<std::string>().empty());
    CHECK(result["facts"].is_object());
    const auto cli = run_ctl({"--socket", pkitd.socket(), "explain", "svc"});
    CHECK(cli.exit_code == 0);
    CHECK_FALSE(cli.out.empty());
    CHECK(pkitd.stop() == 0);
}
