// [[listen]] sockets held by pkitd (SPEC §14): bound at load, passed to each run as
// sd_listen_fds(3) reads them, kept across restarts and unchanged reloads, rebound when
// changed, and a clear positioned error when they cannot be bound.

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// Sends `line` and reads to EOF.
std::string exchange(int fd, const std::string& line) {
    (void)!::write(fd, line.data(), line.size());
    ::shutdown(fd, SHUT_WR);
    std::string reply;
    char buf[256];
    ssize_t n = 0;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) {
        reply.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return reply;
}

std::string tcp_entry(int port, const std::string& extra = "") {
    return "[[listen]]\ntcp = \"127.0.0.1:" + std::to_string(port) + "\"\n" + extra;
}

// A server that answers each connection on fd 3 with "run $PKIT_RUN_MARK: LINE".
std::string echo_server() {
    return "command = [" + toml_str(python3()) +
           ", \"-c\", \"import socket, os\\n"
           "s = socket.socket(fileno=3)\\n"
           "while True:\\n"
           "    c, _ = s.accept()\\n"
           "    c.sendall(b'served ' + c.recv(100))\\n"
           "    c.close()\\n\"]\n";
}

// Lines "KEY value" the script prints about itself; see the first case.
std::map<std::string, std::string> facts(const std::vector<std::string>& lines) {
    std::map<std::string, std::string> out;
    for (const std::string& line : lines) {
        auto space = line.find(' ');
        out[line.substr(0, space)] = space == std::string::npos ? "" : line.substr(space + 1);
    }
    return out;
}

const char* k_report =
    "echo FDS $LISTEN_FDS; echo PID $LISTEN_PID; echo SELF $$$$; echo NAMES $LISTEN_FDNAMES; "
    "echo OPEN $(ls /proc/$$$$/fd | sort -n | tr '\\n' ' '); "
    "echo FD3 $(readlink /proc/$$$$/fd/3); echo FD4 $(readlink /proc/$$$$/fd/4); "
    "echo FD5 $(readlink /proc/$$$$/fd/5); exec sleep 300";

std::map<std::string, std::string> run_facts(Client& client, int run) {
    std::map<std::string, std::string> out;
    wait_for(
        [&] {
            json reply = client.request({{"cmd", "logs"}, {"service", "svc"}});
            if (reply["result"]["run"] != run) {
                return false;
            }
            out = facts(texts(reply["result"]));
            return out.contains("FD5");
        },
        10s, "run " + std::to_string(run) + " reports its descriptors");
    return out;
}

}  // namespace

TEST_CASE("a run gets its sockets at fds 3, 4, 5 with LISTEN_FDS, LISTEN_PID and names") {
    TempDir dir;
    const int tcp = unused_port();
    const int udp = unused_port();
    dir.service("svc", sh_command(k_report) + "[output]\nforward = \"none\"\n" +
                           tcp_entry(tcp, "name = \"http\"\n") +
                           "[[listen]]\nudp = \"[::1]:" + std::to_string(udp) +
                           "\"\n[[listen]]\nunix = " + toml_str(dir.file("admin.sock")) +
                           "\nmode = \"0600\"\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    auto f = run_facts(client, 1);
    CHECK(f["FDS"] == "3");
    CHECK(f["PID"] == f["SELF"]);  // written in the child, after the clone
    CHECK(f["NAMES"] == "http:svc:svc");
    // 0-2, the three sockets, and the fd ls opened to read the directory: nothing of
    // pkitd's (its control socket, pipes of other runs, the listen sockets' own fds).
    CHECK(f["OPEN"].starts_with("0 1 2 3 4 5 "));
    CHECK(f["OPEN"].size() <= std::string("0 1 2 3 4 5 6 ").size());
    CHECK(f["FD3"].starts_with("socket:["));
    CHECK(f["FD4"].starts_with("socket:["));
    CHECK(f["FD5"].starts_with("socket:["));
    CHECK(fs::exists(dir.file("admin.sock")));
    CHECK((fs::status(dir.file("admin.sock")).permissions() & fs::perms::all) ==
          (fs::perms::owner_read | fs::perms::owner_write));

    SUBCASE("a restart passes the same sockets") {
        json reply = client.request({{"cmd", "restart"}, {"services", {"svc"}}});
        REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
        auto g = run_facts(client, 2);
        CHECK(g["FD3"] == f["FD3"]);
        CHECK(g["FD4"] == f["FD4"]);
        CHECK(g["FD5"] == f["FD5"]);
        CHECK(g["PID"] == g["SELF"]);
    }
    SUBCASE("a reload keeps an unchanged entry and rebinds a changed one") {
        const int moved = unused_port();
        dir.service("svc", sh_command(k_report) + "[output]\nforward = \"none\"\n" +
                               tcp_entry(tcp, "name = \"http\"\n") +
                               "[[listen]]\nudp = \"[::1]:" + std::to_string(moved) +
                               "\"\n[[listen]]\nunix = " + toml_str(dir.file("admin.sock")) +
                               "\nmode = \"0640\"\n");
        json reply = client.request({{"cmd", "reload"}});
        REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
        auto g = run_facts(client, 2);
        CHECK(g["FD3"] == f["FD3"]);  // same socket inode
        CHECK(g["FD4"] != f["FD4"]);  // bound anew
        CHECK(g["FD5"] == f["FD5"]);  // kept; its mode changed in place
        CHECK((fs::status(dir.file("admin.sock")).permissions() & fs::perms::all) ==
              (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read));
    }
    SUBCASE("a removed entry is closed") {
        dir.service("svc", sh_command("exec sleep 300"));
        json reply = client.request({{"cmd", "reload"}});
        REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
        wait_for(
            [&] {
                int fd = connect_loopback(tcp);
                if (fd >= 0) {
                    ::close(fd);
                }
                return fd < 0;
            },
            10s, "the port is closed");
        CHECK(!fs::exists(dir.file("admin.sock")));
    }
    CHECK(pkitd.stop() == 0);
    CHECK(!fs::exists(dir.file("admin.sock")));
}

TEST_CASE("a client that connects while the service is down is served once it is back") {
    TempDir dir;
    const int port = unused_port();
    dir.service("svc", echo_server() + tcp_entry(port));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "svc", state_is("running"), 10s, "the server runs");
    CHECK(exchange(connect_loopback(port), "one") == "served one");

    json reply = client.request({{"cmd", "stop"}, {"services", {"svc"}}});
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    int waiting = connect_loopback(port);  // queued in the backlog pkitd holds
    REQUIRE(waiting >= 0);
    reply = client.request({{"cmd", "start"}, {"services", {"svc"}}});
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    CHECK(exchange(waiting, "two") == "served two");
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("a socket that cannot be bound is a positioned configuration error") {
    TempDir dir;
    const int port = unused_port();
    // Held by this test: pkitd finds the port in use.
    int holder = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(holder, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(holder, 1) == 0);
    const std::string file = dir.str() + "/services/svc.toml";

    SUBCASE("at start-up pkitd exits 2") {
        dir.service("svc", sh_command("exec sleep 300") + "\n" + tcp_entry(port));
        const auto result =
            run_pkitd({"--config", dir.str(), "--socket", dir.file("pkitd.sock")}, 10s);
        CHECK(result.exit_code == 2);
        // The error's own line, as --check prints it (SPEC §21), then the count.
        const std::vector<std::string> lines = lines_of(result.err);
        CHECK_MESSAGE(std::ranges::find(lines, file +
                                                   ":3:1: error: listen[1]: cannot bind tcp "
                                                   "127.0.0.1:" +
                                                   std::to_string(port) +
                                                   ": the address is in use") != lines.end(),
                      result.err);
        CHECK_MESSAGE(
            std::ranges::find(lines, "pkitd: 1 configuration error in " + dir.str()) != lines.end(),
            result.err);
    }
    SUBCASE("a Unix socket in a missing directory") {
        dir.service("svc", sh_command("exec sleep 300") +
                               "[[listen]]\nunix = " + toml_str(dir.file("missing/x.sock")) + "\n");
        const auto result =
            run_pkitd({"--config", dir.str(), "--socket", dir.file("pkitd.sock")}, 10s);
        CHECK(result.exit_code == 2);
        CHECK_MESSAGE(
            std::ranges::any_of(lines_of(result.err),
                                [&](const std::string& line) {
                                    return line.starts_with(
                                        file + ":2:1: error: listen[1]: cannot bind unix");
                                }),
            result.err);
        CHECK(result.all().find("does not exist") != std::string::npos);
    }
    SUBCASE("a reload fails and nothing changes") {
        const int other = unused_port();
        dir.service("svc", sh_command("exec sleep 300") + "\n" + tcp_entry(other));
        Daemon pkitd(dir);
        pkitd.wait_ready();
        Client client = pkitd.client();
        json before = wait_status(client, "svc", state_is("running"), 10s, "it runs");
        dir.service("svc", sh_command("exec sleep 300") + "\n" + tcp_entry(port));
        json reply = client.request({{"cmd", "reload"}});
        CHECK(reply["ok"] == false);
        CHECK(reply["error"]["code"] == "invalid_config");
        CHECK(reply["error"]["message"].get<std::string>().find(":3:1: error: listen[1]") !=
              std::string::npos);
        json after = status(client, "svc");
        CHECK(after["pid"] == before["pid"]);
        int still = connect_loopback(other);
        CHECK(still >= 0);
        ::close(still);
        CHECK(pkitd.stop() == 0);
    }
    ::close(holder);
}
