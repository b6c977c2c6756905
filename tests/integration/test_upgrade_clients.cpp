// An upgrade in place loses no request (SPEC §16, issue 44): every client connection but
// the streaming ones is handed to the new pkitd, with the bytes it sent that were not
// handled yet, the replies not written yet, and the request in flight, which the new
// pkitd answers as the old one would have (a stop once its run has ended, a wait once
// decided, the upgrade itself once it serves).

#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "proto/line_client.hpp"
#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

CommandResult upgrade_carrying(const Daemon& pkitd, std::vector<std::string> more = {}) {
    std::vector<std::string> args{"upgrade"};
    args.insert(args.end(), more.begin(), more.end());
    return ctl(pkitd, args, 60s);
}

// One request on a connection of its own, as pkitctl makes it; empty when answered with
// ok, else why not (safe in a thread: no doctest assertion).
std::string ask_alone(const std::string& socket, const std::string& request) {
    auto fd = pkit::proto::connect_unix(socket);
    if (!fd) {
        return "connect: " + fd.error().text;
    }
    std::string why;
    if (auto sent = pkit::proto::send_all(*fd, request + "\n"); !sent) {
        why = "send: " + sent.error();
    } else {
        std::string buffer;
        auto read = pkit::proto::read_line(*fd, buffer, Clock::now() + 30s);
        if (read.status == pkit::proto::LineRead::line) {
            json reply = json::parse(read.text, nullptr, false);
            if (!reply.is_object() || !reply.value("ok", false)) {
                why = "error reply: " + read.text;
            }
        } else {
            why = read.status == pkit::proto::LineRead::eof ? "closed without a reply"
                                                            : "no reply: " + read.text;
        }
    }
    ::close(*fd);
    return why;
}

std::map<std::string, json> service_pids(Client& client) {
    std::map<std::string, json> pids;
    for (const json& s : client.command("status")["result"]["services"]) {
        pids[s["name"].get<std::string>()] = s["pid"];
    }
    return pids;
}

}  // namespace

TEST_CASE("four clients looping status, restart and wait through ten upgrades lose no request") {
    TempDir dir;
    for (const char* name : {"a", "b", "c"}) {
        dir.service(name, sh_command("exec sleep 1000"));
    }
    dir.service("r", sh_command("exec sleep 1001") + "[stop]\ntimeout = \"2s\"\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    for (const char* name : {"a", "b", "c", "r"}) {
        wait_running(client, name);
    }
    const json pid = client.command("ping")["result"]["pid"];
    std::map<std::string, json> before = service_pids(client);

    std::atomic<bool> stop{false};
    std::atomic<long> answered{0};
    std::mutex mutex;
    std::vector<std::string> failures;
    std::vector<std::thread> clients;
    for (int c = 0; c < 4; ++c) {
        clients.emplace_back([&] {
            const std::vector<std::string> requests{
                R"({"id":1,"cmd":"status"})",
                R"({"id":2,"cmd":"restart","services":["r"]})",
                R"({"id":3,"cmd":"wait","services":["r"],"for":"ready","within":30})",
            };
            while (!stop) {
                for (const std::string& request : requests) {
                    std::string why = ask_alone(pkitd.socket(), request);
                    if (why.empty()) {
                        ++answered;
                    } else {
                        std::lock_guard lock(mutex);
                        failures.push_back(request + ": " + why);
                    }
                }
            }
        });
    }
    int upgraded = 0;
    for (int i = 0; i < 10; ++i) {
        CommandResult done = upgrade_carrying(pkitd);
        CHECK_MESSAGE(done.exit_code == 0, done.all() << pkitd.log());
        upgraded += done.exit_code == 0 ? 1 : 0;
    }
    stop = true;
    for (std::thread& t : clients) {
        t.join();
    }
    CHECK(upgraded == 10);
    std::string listed;
    for (std::size_t k = 0; k < failures.size() && k < 10; ++k) {
        listed += failures[k] + "\n";
    }
    CHECK_MESSAGE(failures.empty(), failures.size() << " failed of " << answered.load() << ":\n"
                                                    << listed);
    CHECK(answered > 30);
    Client after = pkitd.client();
    CHECK(after.command("ping")["result"]["pid"] == pid);
    std::map<std::string, json> now = service_pids(after);
    for (const char* name : {"a", "b", "c"}) {
        CHECK_MESSAGE(now[name] == before[name], name);
    }
    CHECK(pkitd.stop() == 0);
}

TEST_CASE(
    "a stop, a restart and a wait in flight, and unread bytes, are answered by the new pkitd") {
    TempDir dir;
    // Its stop signal is ignored: the stop ends with the SIGKILL 3 s later.
    dir.service("slow", sh_command("exec sleep 1000") +
                            "[stop]\nsignal = \"SIGWINCH\"\ntimeout = \"3s\"\n");
    // Ready only while DIR/ready exists.
    const std::string flag = dir.file("ready");
    dir.service("gated", runner_toml() + "[ready]\nexec = [\"test\", \"-f\", " + toml_str(flag) +
                             "]\ninterval = \"100ms\"\ntimeout = \"60s\"\n");
    dir.service("other", quick_restart_runner_toml("1002") + "[ready]\nexec = [\"test\", \"-f\", " +
                             toml_str(flag) + "]\ninterval = \"100ms\"\ntimeout = \"60s\"\n");
    write_file(flag, "");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_running(client, "slow");
    wait_status(client, "gated", state_is("running"), 10s, "gated is ready");
    wait_status(client, "other", state_is("running"), 10s, "other is ready");
    const json pid = client.command("ping")["result"]["pid"];
    fs::remove(flag);

    Client stopper = pkitd.client();
    stopper.send_raw("{\"id\":\"stop\",\"cmd\":\"stop\",\"services\":[\"slow\"]}\n");
    Client restarter = pkitd.client();
    restarter.send_raw("{\"id\":\"restart\",\"cmd\":\"restart\",\"services\":[\"gated\"]}\n");
    // A wait, and behind it a status the old pkitd has read but not handled yet.
    Client waiter = pkitd.client();
    waiter.send_raw(
        "{\"id\":\"wait\",\"cmd\":\"wait\",\"services\":[\"other\"],\"for\":\"ready\","
        "\"within\":60}\n{\"id\":\"then\",\"cmd\":\"status\",\"services\":[\"other\"]}\n");
    // Half a request: the rest comes after the upgrade.
    Client halfway = pkitd.client();
    halfway.send_raw("{\"id\":\"half\",\"cmd\":");
    wait_status(client, "slow", state_is("stopping"), 10s, "slow is stopping");
    wait_status(
        client, "gated", [](const json& s) { return s["run"] == 2 && s["state"] == "starting"; },
        10s, "gated's new run waits to be ready");
    kill_service(client, "other");
    wait_status(
        client, "other", [](const json& s) { return s["run"] == 2 && s["state"] == "starting"; },
        10s, "other's new run waits to be ready");

    CommandResult done = upgrade_carrying(pkitd);
    REQUIRE_MESSAGE(done.exit_code == 0, done.all() << pkitd.log());
    CHECK(done.out.find("upgraded pkitd") != std::string::npos);

    halfway.send_raw("\"ping\"}\n");
    std::optional<json> pong = halfway.read_json(Clock::now() + 10s);
    REQUIRE_MESSAGE(pong.has_value(), pkitd.log());
    CHECK((*pong)["id"] == "half");
    CHECK((*pong)["result"]["pid"] == pid);

    std::optional<json> stopped = stopper.read_json(Clock::now() + 15s);
    REQUIRE_MESSAGE(stopped.has_value(), pkitd.log());
    CHECK((*stopped)["id"] == "stop");
    CHECK_MESSAGE((*stopped)["ok"] == true, stopped->dump());
    CHECK((*stopped)["result"]["services"][0]["state"] == "stopped");

    write_file(flag, "");
    std::optional<json> restarted = restarter.read_json(Clock::now() + 15s);
    REQUIRE_MESSAGE(restarted.has_value(), pkitd.log());
    CHECK((*restarted)["id"] == "restart");
    CHECK_MESSAGE((*restarted)["ok"] == true, restarted->dump());
    CHECK((*restarted)["result"]["services"][0]["run"] == 2);

    std::optional<json> waited = waiter.read_json(Clock::now() + 15s);
    REQUIRE_MESSAGE(waited.has_value(), pkitd.log());
    CHECK((*waited)["id"] == "wait");
    CHECK_MESSAGE((*waited)["ok"] == true, waited->dump());
    std::optional<json> then = waiter.read_json(Clock::now() + 10s);
    REQUIRE(then.has_value());
    CHECK((*then)["id"] == "then");
    CHECK((*then)["result"]["services"][0]["state"] == "running");
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("replies not written yet at an upgrade reach their client whole and in order") {
    TempDir dir;
    for (int i = 0; i < 40; ++i) {
        dir.service("s" + std::to_string(i), sh_command("exec sleep 1000"));
    }
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_running(client, "s39");
    // Far more replies than the socket holds: the rest waits in pkitd, partly written.
    constexpr int k_requests = 300;
    Client reader = pkitd.client();
    std::string requests;
    for (int i = 1; i <= k_requests; ++i) {
        requests += "{\"id\":" + std::to_string(i) + ",\"cmd\":\"status\"}\n";
    }
    reader.send_raw(requests);

    CommandResult done = upgrade_carrying(pkitd);
    REQUIRE_MESSAGE(done.exit_code == 0, done.all() << pkitd.log());
    for (int i = 1; i <= k_requests; ++i) {
        std::optional<json> reply = reader.read_json(Clock::now() + 10s);
        REQUIRE_MESSAGE(reply.has_value(), "reply " << i << " missing\n" << pkitd.log());
        REQUIRE((*reply)["id"] == i);
        REQUIRE((*reply)["result"]["services"].size() == 40);
    }
    CHECK(pkitd.log().find("upgraded from") != std::string::npos);
    CHECK(pkitd.stop() == 0);
}
