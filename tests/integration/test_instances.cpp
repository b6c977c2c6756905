// `instances` (SPEC §13) with real runs: each instance a service of its own, NAME for
// all of them in requests, `after` and `logs`, `scale`, and reloads that change the count.

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

using Names = std::vector<std::string>;

std::string web_toml(int instances) {
    return "command = [\"/bin/sh\", \"-c\", \"echo I am $$PKIT_SERVICE $$PKIT_INSTANCE; exec "
           "sleep 1000\"]\ninstances = " +
           std::to_string(instances) + "\n[output]\nforward = \"none\"\n";
}

json status_of(Client& client, const std::vector<std::string>& names) {
    json reply = client.request({{"cmd", "status"}, {"services", names}});
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    return reply["result"]["services"];
}

Names names_of(const json& services) {
    Names out;
    for (const auto& s : services) {
        out.push_back(s["name"].get<std::string>());
    }
    return out;
}

int pid_of(Client& client, const std::string& name) {
    return wait_running(client, name)["pid"].get<int>();
}

}  // namespace

TEST_CASE("instances run as NAME@I, each its own service; NAME addresses them all") {
    TempDir dir;
    dir.service("web", web_toml(3));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    for (const char* name : {"web@1", "web@2", "web@3"}) {
        wait_running(client, name);
    }
    CHECK(names_of(status_of(client, {"web"})) == Names{"web@1", "web@2", "web@3"});
    CHECK(names_of(status_of(client, {"web@2"})) == Names{"web@2"});
    json wait = client.request({{"cmd", "wait"}, {"services", {"web"}}, {"within", 5}});
    REQUIRE_MESSAGE(wait["ok"] == true, wait.dump());
    CHECK(names_of(wait["result"]["services"]) == Names{"web@1", "web@2", "web@3"});

    // Each instance sees its own name and number.
    json logs = client.request({{"cmd", "logs"}, {"service", "web@2"}});
    CHECK(texts(logs["result"]) == Names{"I am web@2 2"});
    // The protocol's logs takes one instance; pkitctl logs NAME interleaves them all.
    auto out = ctl(pkitd, {"logs", "web"});
    CHECK_MESSAGE(out.exit_code == 0, out.all());
    auto lines = lines_of(out.out);
    std::ranges::sort(lines);
    CHECK(lines == Names{"web@1 | I am web@1 1", "web@2 | I am web@2 2", "web@3 | I am web@3 3"});

    // restart NAME@2 restarts that one alone.
    int one = pid_of(client, "web@1");
    int three = pid_of(client, "web@3");
    json restart = client.request({{"cmd", "restart"}, {"services", {"web@2"}}});
    REQUIRE_MESSAGE(restart["ok"] == true, restart.dump());
    wait_running(client, "web@2", 2);
    CHECK(pid_of(client, "web@1") == one);
    CHECK(pid_of(client, "web@3") == three);
    CHECK(status_of(client, {"web@1"})[0]["run"] == 1);

    auto tree = ctl(pkitd, {"status", "--tree"});
    CHECK_MESSAGE(tree.out.find("\nweb\n") != std::string::npos, tree.out);
    CHECK_MESSAGE(tree.out.find("\n  web@1 ") != std::string::npos, tree.out);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("after NAME waits for every instance; after NAME@I for that one") {
    TempDir dir;
    dir.service("web",
                "command = [\"/bin/sleep\", \"1000\"]\ninstances = 3\n[ready]\nexec = "
                "[\"/usr/bin/test\", \"-e\", " +
                    toml_str(dir.str() + "/ready-${PKIT_INSTANCE}") +
                    "]\ninterval = \"50ms\"\ntimeout = \"60s\"\n");
    dir.service("all", "command = [\"/bin/sleep\", \"1000\"]\nafter = [\"web\"]\n");
    dir.service("two", "command = [\"/bin/sleep\", \"1000\"]\nafter = [\"web@2\"]\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    touch(dir.path() / "ready-2");
    wait_running(client, "two");
    touch(dir.path() / "ready-1");
    wait_status(
        client, "web@1", [](const json& s) { return s.value("ready", false); }, 5s, "web@1 ready");
    CHECK(status_of(client, {"all"})[0]["state"] == "waiting");
    touch(dir.path() / "ready-3");
    wait_running(client, "all");
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("scale starts the missing instances and stops the highest, leaving the rest") {
    TempDir dir;
    dir.service("web", web_toml(2));
    dir.service("solo", "command = [\"/bin/sleep\", \"1000\"]\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    int one = pid_of(client, "web@1");
    int two = pid_of(client, "web@2");

    json up = client.request({{"cmd", "scale"}, {"service", "web"}, {"instances", 4}});
    REQUIRE_MESSAGE(up["ok"] == true, up.dump());
    CHECK(names_of(up["result"]["services"]) == Names{"web@1", "web@2", "web@3", "web@4"});
    wait_running(client, "web@4");
    CHECK(pid_of(client, "web@1") == one);

    auto down = ctl(pkitd, {"scale", "web", "1"});
    CHECK_MESSAGE(down.exit_code == 0, down.all());
    CHECK(down.out.find("web@1") != std::string::npos);
    CHECK(down.out.find("web@2") == std::string::npos);
    wait_for([&] { return names_of(status_of(client, {"web"})) == Names{"web@1"}; }, 10s,
             "web@2 to web@4 removed");
    CHECK(pid_of(client, "web@1") == one);
    CHECK(two > 0);

    // The scaled count holds across a reload while the file's own count is unchanged.
    json same = reload(client);
    CHECK(same["added"].empty());
    CHECK(same["removed"].empty());
    CHECK(names_of(status_of(client, {"web"})) == Names{"web@1"});

    for (const auto& [argv, code] :
         {std::pair{Names{"scale", "solo", "2"}, 1}, std::pair{Names{"scale", "nope", "2"}, 1},
          std::pair{Names{"scale", "web", "0"}, 2}, std::pair{Names{"scale", "web", "1001"}, 2},
          // N in decimal digits only: not hex, octal's 0o, an exponent or a sign.
          std::pair{Names{"scale", "web", "0x10"}, 2}, std::pair{Names{"scale", "web", "0o7"}, 2},
          std::pair{Names{"scale", "web", "1e1"}, 2}, std::pair{Names{"scale", "web", "+3"}, 2}}) {
        auto refused = ctl(pkitd, argv);
        std::string what = argv[1] + " " + argv[2] + ": " + refused.all();
        CHECK_MESSAGE(refused.exit_code == code, what);
    }
    CHECK(names_of(status_of(client, {"web"})) == Names{"web@1"});
    json zero = client.request({{"cmd", "scale"}, {"service", "web"}, {"instances", 0}});
    CHECK(zero["error"]["code"] == "bad_request");
    json plain = client.request({{"cmd", "scale"}, {"service", "solo"}, {"instances", 2}});
    CHECK(plain["error"]["code"] == "bad_request");
    json unknown = client.request({{"cmd", "scale"}, {"service", "nope"}, {"instances", 2}});
    CHECK(unknown["error"]["code"] == "unknown_service");
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("a reload that changes instances starts the added and stops the removed only") {
    TempDir dir;
    dir.service("web", web_toml(2));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    int one = pid_of(client, "web@1");
    int two = pid_of(client, "web@2");
    dir.service("web", web_toml(3));
    json grown = reload(client);
    CHECK(grown["added"] == json::array({"web@3"}));
    CHECK(grown["changed"].empty());
    wait_running(client, "web@3");
    CHECK(pid_of(client, "web@1") == one);
    CHECK(pid_of(client, "web@2") == two);
    dir.service("web", web_toml(2));
    json shrunk = reload(client);
    CHECK(shrunk["removed"] == json::array({"web@3"}));
    wait_for([&] { return names_of(status_of(client, {"web"})).size() == 2; }, 10s,
             "web@3 removed");
    CHECK(pid_of(client, "web@1") == one);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("after NAME waits for the instances scale added, on the dependent's next start") {
    TempDir dir;
    dir.service("web",
                "command = [\"/bin/sleep\", \"1000\"]\ninstances = 2\n[ready]\nexec = "
                "[\"/usr/bin/test\", \"-e\", " +
                    toml_str(dir.str() + "/ready-${PKIT_INSTANCE}") +
                    "]\ninterval = \"50ms\"\ntimeout = \"60s\"\n[stop]\ntimeout = \"2s\"\n");
    dir.service("all", "command = [\"/bin/sleep\", \"1000\"]\nafter = [\"web\"]\n");
    touch(dir.path() / "ready-1");
    touch(dir.path() / "ready-2");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_running(client, "all");

    // web@3 starts and is not ready: all runs on (scale touches no dependent)...
    auto up = ctl(pkitd, {"scale", "web", "3"});
    REQUIRE_MESSAGE(up.exit_code == 0, up.all());
    json three = wait_status(
        client, "web@3", [](const json& s) { return s["pid"].is_number(); }, 10s,
        "web@3 has its run");
    CHECK(three["ready"] == false);
    CHECK(status(client, "all")["run"] == 1);
    CHECK(status(client, "all")["state"] == "running");
    // ...and its restart waits for web@3 to be ready, as if the file said 3.
    json restart = client.request({{"cmd", "restart"}, {"services", {"all"}}});
    REQUIRE_MESSAGE(restart["ok"] == true, restart.dump());
    CHECK(status(client, "all")["state"] == "waiting");
    json why = client.request({{"cmd", "explain"}, {"service", "all"}});
    CHECK_MESSAGE(why.dump().find("web@3") != std::string::npos, why.dump());
    touch(dir.path() / "ready-3");
    wait_running(client, "all", 2);

    // Scaled down to 1, the dependent waits for web@1 alone: web@2 and web@3 are gone.
    auto down = ctl(pkitd, {"scale", "web", "1"});
    REQUIRE_MESSAGE(down.exit_code == 0, down.all());
    wait_for([&] { return names_of(status_of(client, {"web"})) == Names{"web@1"}; }, 10s,
             "web@2 and web@3 removed");
    restart = client.request({{"cmd", "restart"}, {"services", {"all"}}});
    REQUIRE_MESSAGE(restart["ok"] == true, restart.dump());
    wait_running(client, "all", 3);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("scale and a reload of instances leave a group's other members and kept instances") {
    TempDir dir;
    dir.daemon_config(
        "[groups.g]\nstrategy = \"one_for_all\"\nmembers = [\"db\", \"web\", \"api\"]\n");
    dir.service("db", "command = [\"/bin/sleep\", \"1000\"]\n");
    dir.service("web", web_toml(2));
    dir.service("api", "command = [\"/bin/sleep\", \"1000\"]\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_running(client, "api");
    const int db = pid_of(client, "db");
    const int api = pid_of(client, "api");
    const int one = pid_of(client, "web@1");
    const int two = pid_of(client, "web@2");
    auto untouched = [&](const std::string& when) {
        INFO(when);
        CHECK(pid_of(client, "db") == db);
        CHECK(pid_of(client, "api") == api);
        CHECK(pid_of(client, "web@1") == one);
        for (const json& s : status_of(client, {"db", "api", "web@1"})) {
            CHECK(s["run"] == 1);
            CHECK(s["group"] == "g");
        }
    };

    json up = client.request({{"cmd", "scale"}, {"service", "web"}, {"instances", 3}});
    REQUIRE_MESSAGE(up["ok"] == true, up.dump());
    json three = wait_running(client, "web@3");
    CHECK(three["group"] == "g");
    untouched("scaled to 3");
    CHECK(pid_of(client, "web@2") == two);

    auto down = ctl(pkitd, {"scale", "web", "1"});
    REQUIRE_MESSAGE(down.exit_code == 0, down.all());
    wait_for([&] { return names_of(status_of(client, {"web"})) == Names{"web@1"}; }, 10s,
             "web@2 and web@3 removed");
    untouched("scaled to 1");

    // The file's own count changes: a reload adds web@2 and web@3, and changes nothing.
    dir.service("web", web_toml(3));
    json grown = reload(client);
    CHECK(grown["added"] == json::array({"web@2", "web@3"}));
    CHECK(grown["changed"].empty());
    wait_running(client, "web@3");
    untouched("reload to 3");
    const int kept = pid_of(client, "web@2");
    dir.service("web", web_toml(2));
    json shrunk = reload(client);
    CHECK(shrunk["removed"] == json::array({"web@3"}));
    CHECK(shrunk["changed"].empty());
    wait_for([&] { return names_of(status_of(client, {"web"})).size() == 2; }, 10s,
             "web@3 removed");
    untouched("reload to 2");
    CHECK(pid_of(client, "web@2") == kept);

    // The strategy still covers the instances: web@2's crash restarts every member.
    kill_service(client, "web@2");
    wait_running(client, "db", 2);
    wait_running(client, "api", 2);
    wait_running(client, "web@1", 2);
    CHECK(pkitd.stop() == 0);
}
