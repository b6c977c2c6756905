// sd_notify readiness (SPEC §2 [ready] notify, §3): each run gets NOTIFY_SOCKET;
// READY=1 from the run's process group makes it ready, STATUS= shows in status, and a
// message from a live process outside the group is ignored.

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// A shell fragment sending `message` (printf format) to $NOTIFY_SOCKET from a process
// of the run: socat when installed (-u: without it, socat lingers 0.5 s after its
// input ends, which alone would starve a 500 ms watchdog), else python3.
std::string notify(const std::string& message) {
    if (have_program("socat")) {
        return "printf '" + message + "' | socat -u - UNIX-SENDTO:\"$NOTIFY_SOCKET\"; ";
    }
    return "printf '" + message +
           "' | python3 -c 'import os,socket,sys; s=socket.socket(socket.AF_UNIX, "
           "socket.SOCK_DGRAM); s.sendto(sys.stdin.buffer.read(), "
           "os.environ[\"NOTIFY_SOCKET\"])'; ";
}

bool can_send_raw() {
    return have_program("socat") || have_program("python3");
}

// NOTIFY_SOCKET from the environment of process `pid`, or "".
std::string notify_socket_of(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/environ");
    for (std::string entry; std::getline(in, entry, '\0');) {
        if (entry.rfind("NOTIFY_SOCKET=", 0) == 0) {
            return entry.substr(std::strlen("NOTIFY_SOCKET="));
        }
    }
    return "";
}

// Sends one datagram to `path` from this (live, unrelated) process.
void send_datagram(const std::string& path, const std::string& message) {
    const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    REQUIRE(path.size() < sizeof addr.sun_path);
    std::memcpy(addr.sun_path, path.c_str(), path.size());
    const auto sent = ::sendto(fd, message.data(), message.size(), 0,
                               reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::close(fd);
    REQUIRE(sent == static_cast<ssize_t>(message.size()));
}

const std::string k_notify_ready = "[ready]\nnotify = true\ntimeout = \"20s\"\n";

}  // namespace

TEST_CASE("notify: systemd-notify --ready from the run's shell makes it ready, with STATUS") {
    if (!fs::exists("/usr/bin/systemd-notify")) {
        PKIT_SKIP("/usr/bin/systemd-notify is not installed");
    }
    TempDir dir;
    dir.service("svc", sh_command(gate(dir) + "sleep 0.3; /usr/bin/systemd-notify --ready "
                                              "--status=warming; exec sleep 100") +
                           k_notify_ready);
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json s = status(client, "svc");
    CHECK(s["state"] == "starting");
    CHECK(s["ready"] == false);
    CHECK(s["notify_status"].is_null());

    open_gate(dir);
    s = wait_status(client, "svc", state_is("running"), 10s, "ready over sd_notify");
    CHECK(s["ready"] == true);
    CHECK(s["notify_status"] == "warming");
    CHECK(s["run"] == 1);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("notify: a raw READY=1 datagram from the run makes it ready") {
    if (!can_send_raw()) {
        PKIT_SKIP("neither socat nor python3 is installed");
    }
    TempDir dir;
    dir.service("svc", sh_command(gate(dir) + notify("READY=1\\nSTATUS=serving 3 clients") +
                                  "exec sleep 1000") +
                           k_notify_ready);
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    CHECK(status(client, "svc")["state"] == "starting");
    open_gate(dir);
    json s = wait_status(client, "svc", state_is("running"), 10s, "ready over sd_notify");
    CHECK(s["notify_status"] == "serving 3 clients");
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("notify: READY=1 from a live process outside the run's group is ignored") {
    if (!can_send_raw()) {
        PKIT_SKIP("neither socat nor python3 is installed");
    }
    TempDir dir;
    const std::string go2 = dir.file("go2");
    // The run reports a STATUS first (processed after the intruder's message, the
    // socket being FIFO), then waits for go2 before sending READY=1 itself.
    dir.service("svc",
                sh_command(gate(dir) + notify("STATUS=from the run") + "while [ ! -e " + go2 +
                           " ]; do sleep 0.01; done; " + notify("READY=1") + "exec sleep 1000") +
                    k_notify_ready);
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json s = wait_status(
        client, "svc", [](const json& st) { return st["pid"].is_number_integer(); }, 5s, "a pid");
    const std::string path = notify_socket_of(s["pid"].get<pid_t>());
    REQUIRE_MESSAGE(!path.empty(), "no NOTIFY_SOCKET in the run's environment");
    REQUIRE(path[0] == '/');

    send_datagram(path, "READY=1\nSTATUS=intruder");
    open_gate(dir);
    s = wait_status(
        client, "svc", [](const json& st) { return st["notify_status"] == "from the run"; }, 10s,
        "the run's own STATUS");
    CHECK(s["state"] == "starting");
    CHECK(s["ready"] == false);

    write_file(go2, "");
    s = wait_status(client, "svc", state_is("running"), 10s, "the run's own READY=1");
    CHECK(s["notify_status"] == "from the run");
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("notify: EXTEND_TIMEOUT_USEC moves the ready deadline") {
    if (!can_send_raw()) {
        PKIT_SKIP("neither socat nor python3 is installed");
    }
    TempDir dir;
    // Ready after about 1.5 s, past the 800 ms timeout, but 3 s were asked for first.
    dir.service("svc", sh_command(notify("EXTEND_TIMEOUT_USEC=3000000") + "sleep 1.5; " +
                                  notify("READY=1") + "exec sleep 1000") +
                           restart_table("never", "50ms") +
                           "[ready]\nnotify = true\ntimeout = \"800ms\"\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json s = wait_status(
        client, "svc", [](const json& st) { return st["state"] != "starting"; }, 10s,
        "the run leaves starting");
    CHECK(s["state"] == "running");
    CHECK(s["run"] == 1);
    CHECK(s["last_exit"].is_null());
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("notify watchdog: a run that stops sending WATCHDOG=1 is killed by liveness") {
    if (!can_send_raw()) {
        PKIT_SKIP("neither socat nor python3 is installed");
    }
    TempDir dir;
    const std::string fed = dir.file("fed");
    const std::string starve = dir.file("starve");
    dir.service("svc", sh_command(notify("READY=1") + "while [ ! -e " + starve + " ]; do " +
                                  notify("WATCHDOG=1") + "echo fed >> " + fed +
                                  "; sleep 0.1; done; exec sleep 1000") +
                           restart_table("on_crash", "5s") + k_notify_ready +
                           "[health]\nwatchdog = \"500ms\"\nfailures = 2\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json first = wait_status(client, "svc", state_is("running"), 10s, "ready");

    // Fed for 20 rounds (at least 2 s, four periods): never killed.
    wait_for([&] { return read_lines(fed).size() >= 20; }, 15s, "20 WATCHDOG=1",
             [&] { return std::to_string(read_lines(fed).size()); });
    json s = status(client, "svc");
    CHECK(s["liveness_kills"] == 0);
    CHECK(s["pid"] == first["pid"]);
    CHECK(s["health"]["status"] == "healthy");

    const auto starved_at = Clock::now();
    write_file(starve, "");
    s = wait_status(client, "svc", liveness_killed(1), 10s, "a watchdog kill");
    const double after = seconds_since(starved_at);
    INFO("killed " << after << " s after the last WATCHDOG=1");
    CHECK(after >= 0.5);
    CHECK(after < 5.0);
    CHECK(last_exit(s)["killed_by"] == "liveness");
    CHECK(s["state"] == "backoff");
    CHECK(pkitd.stop() == 0);
}
