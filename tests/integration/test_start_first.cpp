// start_first restarts and rolling restarts (SPEC §14): the new run starts beside the
// old one, which is stopped only once the new one is ready; a new run that fails
// leaves the old one serving and the restart fails with restart_failed.

#include <unistd.h>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// A server on fd 3 that answers "served LINE" and says READY=1 once it accepts; it
// ends only between connections (SIGTERM stays blocked and is polled), so a stop never
// cuts a request short. With HOLD set, it waits for that file before READY=1; with
// FAIL set and existing, it exits 3 at once.
const char* k_server = R"(import os, signal, socket, sys, time
fail = os.environ.get('FAIL')
if fail and os.path.exists(fail):
    sys.exit(3)
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])
s = socket.socket(fileno=3)
s.settimeout(0.05)
hold = os.environ.get('HOLD')
while hold and not os.path.exists(hold):
    time.sleep(0.02)
n = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
n.sendto(b'READY=1', os.environ['NOTIFY_SOCKET'])
while signal.SIGTERM not in signal.sigpending():
    try:
        c, _ = s.accept()
    except socket.timeout:
        continue
    c.settimeout(5)
    c.sendall(b'served ' + c.recv(100))
    c.close()
)";

std::string server_service(const TempDir& dir, int port, const std::string& extra_env = "",
                           const std::string& ready_timeout = "5s") {
    write_file(dir.path() / "server.py", k_server);
    return "command = [" + toml_str(python3()) + ", " + toml_str(dir.file("server.py")) +
           "]\nenv = { " + extra_env + " }\n[[listen]]\ntcp = \"127.0.0.1:" + std::to_string(port) +
           "\"\n[restart]\norder = \"start_first\"\n[ready]\nnotify = true\ntimeout = \"" +
           ready_timeout + "\"\n[stop]\ntimeout = \"5s\"\n[output]\nforward = \"none\"\n";
}

// One request to 127.0.0.1:port; true when it was served.
bool request_once(int port) {
    int fd = connect_loopback(port);
    bool ok = false;
    if (fd >= 0 && ::write(fd, "x", 1) == 1) {
        char buf[32];
        ssize_t n = ::read(fd, buf, sizeof buf);
        ok = n > 0 && std::string(buf, static_cast<std::size_t>(n)) == "served x";
    }
    ::close(fd);
    return ok;
}

}  // namespace

TEST_CASE("start_first with [[listen]]: restarts under a steady client lose no request") {
    TempDir dir;
    const int port = unused_port();
    dir.service("web", server_service(dir, port));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "web", state_is("running"), 10s, "the server is ready");

    SteadyClient load([port] { return request_once(port); });
    for (int i = 0; i < 5; ++i) {
        json reply = client.request({{"cmd", "restart"}, {"services", {"web"}}});
        CHECK_MESSAGE(reply["ok"] == true, reply.dump());
    }
    load.stop();
    CHECK(load.failed() == 0);
    CHECK(load.served() > 0);
    CHECK(status(client, "web")["run"] == 6);
    CHECK(pkitd.log().find("web: run 2 ready, stopping run 1") != std::string::npos);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("start_first: the overlap shows draining_pid, and pid is the new run's") {
    TempDir dir;
    const int port = unused_port();
    dir.service("web", server_service(dir, port, "HOLD = " + toml_str(dir.file("go"))));
    touch(dir.path() / "go");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json before = wait_status(client, "web", state_is("running"), 10s, "run 1 is ready");
    fs::remove(dir.path() / "go");
    json reply = client.request({{"cmd", "restart"}, {"services", {"web"}}, {"no_block", true}});
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    json during = wait_status(
        client, "web", [](const json& s) { return s["run"] == 2 && s["pid"].is_number(); }, 10s,
        "run 2 is spawned");
    CHECK(during["state"] == "starting");
    CHECK(during["draining_pid"] == before["pid"]);
    CHECK(during["pid"] != before["pid"]);
    CHECK(request_once(port));  // run 1 still serves
    touch(dir.path() / "go");
    json after = wait_status(
        client, "web", [](const json& s) { return s["draining_pid"].is_null(); }, 10s,
        "run 1 has drained");
    CHECK(after["pid"] == during["pid"]);
    CHECK(after["state"] == "running");
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("start_first: a new run that fails leaves the old one serving") {
    TempDir dir;
    const int port = unused_port();
    SUBCASE("it exits at once") {
        dir.service("web", server_service(dir, port, "FAIL = " + toml_str(dir.file("fail"))));
    }
    SUBCASE("it is never ready") {
        dir.service("web", server_service(dir, port, "HOLD = " + toml_str(dir.file("go")), "1s"));
        touch(dir.path() / "go");
    }
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json before = wait_status(client, "web", state_is("running"), 10s, "run 1 is ready");
    touch(dir.path() / "fail");
    fs::remove(dir.path() / "go");
    const auto result = run_ctl({"--socket", pkitd.socket(), "restart", "web"}, 30s);
    CHECK(result.exit_code == 1);
    CHECK_MESSAGE(result.all().find("restart_failed: web: run 2 ") != std::string::npos,
                  result.all());
    CHECK(result.all().find("; run 1 keeps running") != std::string::npos);
    const bool exited = result.all().find("exited with code 3") != std::string::npos;
    const bool late =
        result.all().find("was not ready within its [ready] timeout") != std::string::npos;
    CHECK((exited || late));
    json after = status(client, "web");
    CHECK(after["pid"] == before["pid"]);
    CHECK(after["run"] == 1);
    CHECK(after["state"] == "running");
    CHECK(after["restarts"] == 0);
    CHECK(request_once(port));
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("restart --rolling restarts one service at a time, each ready before the next") {
    TempDir dir;
    for (const char* name : {"a", "b", "c"}) {
        dir.service(name, server_service(dir, unused_port(),
                                         std::string("FAIL = ") +
                                             toml_str(dir.file(std::string(name) + ".fail"))));
    }
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    for (const char* name : {"a", "b", "c"}) {
        wait_status(client, name, state_is("running"), 10s, "it is ready");
    }
    SUBCASE("in order") {
        const auto result =
            run_ctl({"--socket", pkitd.socket(), "restart", "--rolling", "a", "b", "c"}, 30s);
        CHECK_MESSAGE(result.exit_code == 0, result.all());
        const std::string log = pkitd.log();
        const auto a_ready = log.find("a: run 2 ready, stopping run 1");
        const auto b_started = log.find("b: started (pid");
        const auto b_ready = log.find("b: run 2 ready, stopping run 1");
        const auto c_started = log.find("c: started (pid", log.find("c: ready (run 1)"));
        REQUIRE(a_ready != std::string::npos);
        REQUIRE(b_ready != std::string::npos);
        CHECK(log.find("b: started (pid", log.find("b: ready (run 1)")) > a_ready);
        CHECK(c_started > b_ready);
        (void)b_started;
        for (const char* name : {"a", "b", "c"}) {
            CHECK(status(client, name)["run"] == 2);
        }
    }
    SUBCASE("a failure stops the roll") {
        touch(dir.path() / "b.fail");
        const auto result =
            run_ctl({"--socket", pkitd.socket(), "restart", "--rolling", "a", "b", "c"}, 30s);
        CHECK(result.exit_code == 1);
        CHECK_MESSAGE(
            result.all().find("restart_failed: b: run 2 exited with code 3") != std::string::npos,
            result.all());
        CHECK(status(client, "a")["run"] == 2);
        CHECK(status(client, "b")["run"] == 1);
        CHECK(status(client, "c")["run"] == 1);  // never restarted
    }
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("restart --rolling NAME restarts its instances one at a time, in order") {
    TempDir dir;
    dir.service("web", "instances = 3\n" + runner_toml());
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    for (const char* name : {"web@1", "web@2", "web@3"}) {
        wait_running(client, name);
    }
    const auto result = run_ctl({"--socket", pkitd.socket(), "restart", "--rolling", "web"}, 30s);
    CHECK_MESSAGE(result.exit_code == 0, result.all());
    std::size_t previous = 0;
    for (const char* name : {"web@1", "web@2", "web@3"}) {
        CAPTURE(name);
        CHECK(status(client, name)["run"] == 2);
        const std::size_t started = pkitd.log().find(std::string(name) + ": started (pid");
        const std::size_t again =
            pkitd.log().find(std::string(name) + ": started (pid", started + 1);
        REQUIRE(again != std::string::npos);
        CHECK(again > previous);
        previous = again;
    }
    CHECK(pkitd.stop() == 0);
}
