// A reload that changes a start_first service (SPEC §14, §21): with a [ready] check that
// the old run can answer (an http probe of the service's own [[listen]] port), a reload
// to a broken program stops the working run; pkitd --check and pkitd's log warn about
// such a probe. With `notify`, the old run keeps serving, and `pkitctl reload` waits for
// the replacement and exits 1 naming the service.

#include <unistd.h>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// An HTTP server on fd 3 (the socket pkitd holds) that answers every request with
// "ok"; with NOTIFY set it says READY=1 first. As `broken`, it never serves or says
// READY=1, and exits 1 after BROKEN_AFTER seconds (an application that dies while it
// loads). SIGTERM ends it between requests.
const char* k_server = R"(import os, signal, socket, sys, time
if len(sys.argv) > 1 and sys.argv[1] == 'broken':
    time.sleep(float(os.environ.get('BROKEN_AFTER', '3')))
    sys.exit(1)
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])
s = socket.socket(fileno=3)
s.settimeout(0.05)
if os.environ.get('NOTIFY'):
    n = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    n.sendto(b'READY=1', os.environ['NOTIFY_SOCKET'])
while signal.SIGTERM not in signal.sigpending():
    try:
        c, _ = s.accept()
    except socket.timeout:
        continue
    c.settimeout(5)
    try:
        c.recv(4096)
        c.sendall(b'HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok')
    except OSError:
        pass
    c.close()
)";

// The service file: the server (or `broken`) on 127.0.0.1:port, start_first, with
// `ready` as its [ready] table's lines.
std::string server_toml(const TempDir& dir, int port, const std::string& mode,
                        const std::string& ready, const std::string& env = "") {
    write_file(dir.path() / "server.py", k_server);
    return "command = [" + toml_str(python3()) + ", " + toml_str(dir.file("server.py")) + ", " +
           toml_str(mode) + "]\nenv = { " + env +
           " }\n[[listen]]\ntcp = \"127.0.0.1:" + std::to_string(port) +
           "\"\n[restart]\norder = \"start_first\"\n[ready]\n" + ready +
           "\n[stop]\ntimeout = \"5s\"\n[output]\nforward = \"none\"\n";
}

// One GET of 127.0.0.1:port; true when answered "ok".
bool served(int port) {
    int fd = connect_loopback(port);
    std::string reply;
    if (fd >= 0) {
        const std::string request = "GET / HTTP/1.0\r\n\r\n";
        if (::write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
            char buf[256];
            ssize_t n = 0;
            while ((n = ::read(fd, buf, sizeof buf)) > 0) {
                reply.append(buf, static_cast<std::size_t>(n));
            }
        }
        ::close(fd);
    }
    return reply.starts_with("HTTP/1.0 200") && reply.ends_with("\r\n\r\nok");
}

std::string http_ready(int port) {
    return "http = \"http://127.0.0.1:" + std::to_string(port) + "/\"\ntimeout = \"10s\"";
}

}  // namespace

TEST_CASE(
    "an http [ready] probe of its own socket: a reload to a broken program stops the "
    "working run, and pkitd warns about the probe") {
    TempDir dir;
    const int port = unused_port();
    dir.service("web", server_toml(dir, port, "serve", http_ready(port)));

    // --check (and pkitctl check) warn at the probe's key; the tree is valid.
    const auto check = run_pkitd({"--config", dir.str(), "--check"});
    CHECK(check.exit_code == 0);
    const std::string at = dir.file("services/web.toml") + ":8:1: warning: ready.http: ";
    CHECK_MESSAGE(check.all().find(at) != std::string::npos, check.all());
    CHECK(check.all().find("use [ready] notify = true") != std::string::npos);
    const auto ctl_check = run_ctl({"check", dir.str()});
    CHECK(ctl_check.exit_code == 0);
    CHECK_MESSAGE(ctl_check.all().find(at) != std::string::npos, ctl_check.all());

    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "web", state_is("running"), 15s, "the server is ready");
    REQUIRE(served(port));
    CHECK_MESSAGE(pkitd.log().find(at) != std::string::npos, pkitd.log());

    // The deploy: a program that loads for a while, never serves, then crashes.
    dir.service("web", server_toml(dir, port, "broken", http_ready(port)));
    const auto result = ctl(pkitd, {"reload"}, 30s);
    // The old run answered the probe meant for the new one.
    // (pkitd's log is written as the reply goes out: polled, not read once.)
    wait_for(
        [&] { return pkitd.log().find("web: run 2 ready, stopping run 1") != std::string::npos; },
        10s, "the old run answered the new run's probe");
    CHECK_MESSAGE(result.all().find(at) != std::string::npos, result.all());
    wait_status(
        client, "web", [](const json& s) { return s["draining_pid"].is_null() && s["run"] == 2; },
        15s, "run 1 is gone");
    // Nothing serves any more: the new run never accepts, then crashes.
    wait_status(
        client, "web", [](const json& s) { return s["last_exit"].is_object(); }, 15s,
        "the broken run crashed");
    CHECK(pkitd.stop() == 0);
}

TEST_CASE(
    "notify: a reload to a broken program keeps the old run serving, and pkitctl reload "
    "exits 1 naming the service") {
    TempDir dir;
    const int port = unused_port();
    SUBCASE("the new run dies") {
        dir.service("web", server_toml(dir, port, "serve", "notify = true\ntimeout = \"10s\"",
                                       "NOTIFY = \"1\", BROKEN_AFTER = \"0.5\""));
    }
    SUBCASE("the new run is never ready") {
        dir.service("web", server_toml(dir, port, "serve", "notify = true\ntimeout = \"1s\"",
                                       "NOTIFY = \"1\", BROKEN_AFTER = \"60\""));
    }
    const std::string good = read_file(dir.path() / "services/web.toml");
    CHECK(run_pkitd({"--config", dir.str(), "--check"}).all().find("warning") == std::string::npos);
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json before = wait_status(client, "web", state_is("running"), 15s, "the server is ready");
    REQUIRE(served(port));

    std::string broken = good;
    broken.replace(broken.find("\"serve\""), 7, "\"broken\"");
    dir.service("web", broken);
    SteadyClient load([port] { return served(port); });
    const auto result = ctl(pkitd, {"reload"}, 30s);
    load.stop();
    CHECK_MESSAGE(result.exit_code == 1, result.all());
    CHECK(result.out.find("reloaded; changed: web; 0 unchanged") != std::string::npos);
    CHECK_MESSAGE(result.err.find("pkitctl: web: its new run failed: run 2 ") != std::string::npos,
                  result.all());
    CHECK(result.err.find("; run 1 keeps running (the reload stays applied)") != std::string::npos);
    const bool exited = result.err.find("run 2 exited with code 1") != std::string::npos;
    const bool late =
        result.err.find("was not ready within its [ready] timeout") != std::string::npos;
    CHECK((exited || late));
    CHECK(load.failed() == 0);
    CHECK(load.served() > 0);
    json after = status(client, "web");
    CHECK(after["pid"] == before["pid"]);
    CHECK(after["state"] == "running");
    CHECK(served(port));

    // --json: the result, with the failure in it, and exit 1 as well; --no-wait: at once.
    dir.service("web", good);
    REQUIRE(ctl(pkitd, {"reload"}, 30s).exit_code == 0);  // back to a working program
    dir.service("web", broken);
    const auto as_json = ctl(pkitd, {"--json", "reload"}, 30s);
    CHECK(as_json.exit_code == 1);
    json reply = json::parse(as_json.out);
    REQUIRE(reply["replacements"].size() == 1);
    CHECK(reply["replacements"][0]["service"] == "web");
    CHECK(reply["replacements"][0]["ok"] == false);
    CHECK(reply["replacements"][0]["reason"].get<std::string>().find("keeps running") !=
          std::string::npos);
    dir.service("web", good);
    json no_block = client.request({{"cmd", "reload"}, {"no_block", true}});
    REQUIRE_MESSAGE(no_block["ok"] == true, no_block.dump());
    REQUIRE(no_block["result"]["replacements"].size() == 1);
    CHECK(no_block["result"]["replacements"][0]["ok"].is_null());
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("pkitctl reload exits 0 once the replacement it began is ready") {
    TempDir dir;
    const int port = unused_port();
    dir.service("web", server_toml(dir, port, "serve", "notify = true\ntimeout = \"10s\"",
                                   "NOTIFY = \"1\""));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "web", state_is("running"), 15s, "the server is ready");
    dir.service("web", server_toml(dir, port, "serve", "notify = true\ntimeout = \"10s\"",
                                   "NOTIFY = \"2\""));
    const auto result = ctl(pkitd, {"--json", "reload"}, 30s);
    CHECK_MESSAGE(result.exit_code == 0, result.all());
    json reply = json::parse(result.out);
    REQUIRE(reply["replacements"].size() == 1);
    CHECK(reply["replacements"][0]["ok"] == true);
    // Answered once run 2 was ready: it is the service's run now.
    json st = status(client, "web");
    CHECK(st["run"] == 2);
    CHECK(st["ready"] == true);
    CHECK(pkitd.stop() == 0);
}
