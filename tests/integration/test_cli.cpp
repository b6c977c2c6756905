// pkitctl against a real pkitd (SPEC §10): output, exit statuses and the socket lookup.

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// A tree with a running service `web` and a one-shot `job` that ends done.
void two_services(const TempDir& dir) {
    dir.service("web", sh_command("echo hello from web; exec sleep 1000"));
    dir.service("job", sh_command("exit 0"));
}

}  // namespace

TEST_CASE("pkitctl status prints one row a service, and --json the protocol result") {
    TempDir dir;
    two_services(dir);
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "web", state_is("running"), 5s, "running");
    wait_status(client, "job", state_is("done"), 5s, "done");

    const auto table = ctl(pkitd, {"status"});
    INFO("stdout:\n" << table.out << "stderr:\n" << table.err);
    CHECK(table.exit_code == 0);
    CHECK(table.out.find("NAME") != std::string::npos);
    CHECK(table.out.find("web") != std::string::npos);
    CHECK(table.out.find("running") != std::string::npos);
    CHECK(table.out.find("done") != std::string::npos);
    CHECK(table.out.find("\x1b[") == std::string::npos);  // no colours off a terminal

    const auto as_json = ctl(pkitd, {"--json", "status"});
    CHECK(as_json.exit_code == 0);
    json result = json::parse(as_json.out, nullptr, false);
    REQUIRE_MESSAGE(result.is_object(), as_json.out);
    CHECK(result["daemon"]["socket"] == pkitd.socket());
    REQUIRE(result["services"].size() == 2);
    CHECK(result["services"][0]["name"] == "job");  // name order: no `after`, no group
    CHECK(result["services"][1]["name"] == "web");
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("pkitctl status NAME exits 0 when running, 3 when not, 1 for an unknown name") {
    TempDir dir;
    two_services(dir);
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "web", state_is("running"), 5s, "running");
    wait_status(client, "job", state_is("done"), 5s, "done");

    CHECK(ctl(pkitd, {"status", "web"}).exit_code == 0);
    CHECK(ctl(pkitd, {"status", "job"}).exit_code == 3);
    CHECK(ctl(pkitd, {"status", "web", "job"}).exit_code == 3);
    const auto unknown = ctl(pkitd, {"status", "nope"});
    CHECK(unknown.exit_code == 1);
    CHECK(unknown.err.find("nope") != std::string::npos);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("pkitctl stop, start and restart steer a service") {
    TempDir dir;
    two_services(dir);
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "web", state_is("running"), 5s, "running");

    CHECK(ctl(pkitd, {"stop", "web"}).exit_code == 0);
    json s = status(client, "web");
    CHECK(s["state"] == "stopped");
    CHECK(s["stopped"] == "operator");

    CHECK(ctl(pkitd, {"start", "web"}).exit_code == 0);
    s = wait_status(client, "web", state_is("running"), 5s, "running again");
    CHECK(s["run"] == 2);

    CHECK(ctl(pkitd, {"restart", "web"}).exit_code == 0);
    s = wait_status(client, "web", state_is("running"), 5s, "running after restart");
    CHECK(s["run"] == 3);
    CHECK(s["restarts"] == 0);  // operator restarts are not counted

    CHECK(ctl(pkitd, {"stop", "nope"}).exit_code == 1);
    CHECK(status(client, "web")["state"] == "running");  // an unknown name does nothing
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("pkitctl logs prints the lines of the latest run") {
    TempDir dir;
    two_services(dir);
    Daemon pkitd(dir);
    pkitd.wait_ready();
    wait_for(
        [&] {
            return ctl(pkitd, {"logs", "web"}).out == "hello from web\n";
        },
        5s, "pkitctl logs web",
        [&] {
            return ctl(pkitd, {"logs", "web"}).all();
        });
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("pkitctl exits 4 naming the socket when pkitd cannot be reached") {
    TempDir dir;
    const std::string socket = dir.file("nobody-home.sock");
    SUBCASE("--socket") {
        const auto result = run_ctl({"--socket", socket, "status"});
        CHECK(result.exit_code == 4);
        CHECK_MESSAGE(result.err.find(socket) != std::string::npos, result.err);
    }
    SUBCASE("PKIT_SOCKET") {
        const auto result = run_ctl({"status"}, 20s, {"PKIT_SOCKET=" + socket});
        CHECK(result.exit_code == 4);
        CHECK_MESSAGE(result.err.find(socket) != std::string::npos, result.err);
    }
}

TEST_CASE("pkitctl usage errors exit 2") {
    CHECK(run_ctl({"frobnicate"}).exit_code == 2);
    CHECK(run_ctl({"status", "--no-such-option"}).exit_code == 2);
}

TEST_CASE("pkitctl finds pkitd through PKIT_SOCKET, and shutdown makes it exit 0") {
    TempDir dir;
    two_services(dir);
    Daemon pkitd(dir);
    pkitd.wait_ready();
    const auto result = run_ctl({"shutdown"}, 20s, {"PKIT_SOCKET=" + pkitd.socket()});
    CHECK_MESSAGE(result.exit_code == 0, result.all());
    CHECK(pkitd.wait_exit(10s) == 0);
    CHECK_FALSE(fs::exists(pkitd.socket()));  // removed on exit
    const auto left = marker_processes(pkitd.marker());
    CHECK_MESSAGE(left.empty(), "left behind:" << describe(left));
}
