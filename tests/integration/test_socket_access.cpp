// Who may use the control socket and how many at once (SPEC §9): many concurrent
// clients, a client that never reads, and the peer-credential check.

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// Connects to a Unix socket; -1 on failure. No doctest calls: used from threads.
int raw_connect(const std::string& path, bool nonblocking) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        ::close(fd);
        return -1;
    }
    if (nonblocking) {
        ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    }
    return fd;
}

// One request on a fresh connection; the reply line, or an error text starting "!".
std::string raw_request(const std::string& path, const std::string& line,
                        std::chrono::milliseconds timeout) {
    const int fd = raw_connect(path, false);
    if (fd < 0) {
        return std::string("!connect: ") + std::strerror(errno);
    }
    const auto deadline = Clock::now() + timeout;
    std::size_t sent = 0;
    while (sent < line.size()) {
        const ssize_t n = ::send(fd, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) {
            ::close(fd);
            return std::string("!send: ") + std::strerror(errno);
        }
        sent += static_cast<std::size_t>(n);
    }
    std::string buffer;
    while (buffer.find('\n') == std::string::npos) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) {
            ::close(fd);
            return "!timeout after " + std::to_string(buffer.size()) + " bytes";
        }
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
            continue;
        }
        char chunk[65536];
        const ssize_t n = ::read(fd, chunk, sizeof(chunk));
        if (n <= 0) {
            ::close(fd);
            return "!eof after " + std::to_string(buffer.size()) + " bytes";
        }
        buffer.append(chunk, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return buffer.substr(0, buffer.find('\n'));
}

// Why the uid-switching cases cannot run here, or empty.
std::string other_uid_unavailable() {
    if (!is_root()) {
        return "not root: cannot connect as another uid";
    }
    if (!have_program("setpriv")) {
        return "setpriv is missing";
    }
    if (!have_program("socat")) {
        return "socat is missing";
    }
    return "";
}

// Sends one ping as uid/gid 65534 through socat; the reply lines.
CommandResult ping_as_nobody(const std::string& socket) {
    return run_command({"/bin/sh", "-c",
                        "printf '{\"id\":1,\"cmd\":\"ping\"}\\n' | setpriv --reuid=65534 "
                        "--regid=65534 --clear-groups socat -t 5 - UNIX-CONNECT:" +
                            socket},
                       10s);
}

std::vector<json> json_lines(const std::string& text) {
    std::vector<json> out;
    std::size_t start = 0;
    while (start < text.size()) {
        const auto end = text.find('\n', start);
        const auto line = text.substr(start, end == std::string::npos ? end : end - start);
        if (!line.empty()) {
            out.push_back(json::parse(line, nullptr, false));
        }
        if (end == std::string::npos) {
            break;
        }
        start = end + 1;
    }
    return out;
}

}  // namespace

TEST_CASE("socket access: 100 concurrent clients each get their status reply") {
    TempDir dir;
    for (const char* name : {"a", "b", "c"}) {
        dir.service(name, sh_command("exec sleep 1000"));
    }
    Daemon pkitd(dir);
    pkitd.wait_ready();

    constexpr int k_clients = 100;
    std::vector<std::string> replies(k_clients);
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int i = 0; i < k_clients; ++i) {
        threads.emplace_back([&, i] {
            ++ready;
            while (!go.load()) {
                std::this_thread::yield();
            }
            replies[i] = raw_request(pkitd.socket(),
                                     json({{"id", i}, {"cmd", "status"}}).dump() + "\n", 10s);
        });
    }
    while (ready.load() < k_clients) {
        std::this_thread::yield();
    }
    go = true;
    for (auto& t : threads) {
        t.join();
    }

    int good = 0;
    for (int i = 0; i < k_clients; ++i) {
        const json reply = json::parse(replies[i], nullptr, false);
        const bool ok = reply.is_object() && reply.value("id", -1) == i &&
                        reply.value("ok", false) && reply["result"]["services"].size() == 3;
        if (!ok) {
            MESSAGE("client " << i << ": " << replies[i].substr(0, 300));
        } else {
            ++good;
        }
    }
    CHECK(good == k_clients);
    CHECK(pkitd.client().command("ping")["ok"] == true);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("socket access: a client that never reads does not keep 20 pings from being answered") {
    TempDir dir;
    for (int i = 0; i < 50; ++i) {
        dir.service("s" + std::to_string(i), sh_command("exec sleep 1000"));
    }
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_for(
        [&] {
            json r = client.command("status");
            for (const auto& s : r["result"]["services"]) {
                if (s["state"] != "running") {
                    return false;
                }
            }
            return r["result"]["services"].size() == 50;
        },
        10s, "50 services running");

    // The stalled client: status requests (each ~50 rows) sent and never read, until
    // pkitd stops reading it because everything between them is full.
    const int stalled = raw_connect(pkitd.socket(), true);
    REQUIRE(stalled >= 0);
    const std::string request = "{\"id\": 1, \"cmd\": \"status\"}\n";
    std::string pending;
    int sent = 0;
    bool full = false;
    const auto send_deadline = Clock::now() + 20s;
    while (!full && Clock::now() < send_deadline) {
        if (pending.empty()) {
            pending = request;
            ++sent;
        }
        const ssize_t n = ::send(stalled, pending.data(), pending.size(), MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            pollfd p{stalled, POLLOUT, 0};
            // Half a second without room: pkitd has stopped reading this client.
            full = ::poll(&p, 1, 500) == 0;
            continue;
        }
        REQUIRE_MESSAGE(n > 0, "send to the stalled client failed: " << std::strerror(errno));
        pending.erase(0, static_cast<std::size_t>(n));
    }
    MESSAGE("the stalled client sent " << sent << " status requests; full: " << full);
    REQUIRE_MESSAGE(full, "pkitd kept reading the stalled client for 20 s");

    // Every ping beside it is answered, each within a generous liveness deadline (its
    // latency is a figure: bench_stalled prints it).
    Client pinger = pkitd.client();
    for (int i = 0; i < 20; ++i) {
        json reply = pinger.command("ping", 5s);
        CHECK(reply["ok"] == true);
        CHECK(reply["result"]["protocol"] == 1);
    }
    // pkitd is still healthy for new connections too.
    CHECK(status(pinger, "s0")["state"] == "running");
    ::close(stalled);
    CHECK(pkitd.client().command("ping")["ok"] == true);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("socket access: another uid not in control_users gets forbidden then EOF") {
    const std::string why = other_uid_unavailable();
    if (!why.empty()) {
        PKIT_SKIP(why);
    }
    TempDir dir;
    REQUIRE(::chmod(dir.str().c_str(), 0755) == 0);
    dir.daemon_config("control_users = [\"root\"]\n");
    dir.service("svc", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();

    struct stat st {};
    REQUIRE(::stat(pkitd.socket().c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0666);

    const auto result = ping_as_nobody(pkitd.socket());
    INFO("stdout:\n" << result.out << "stderr:\n" << result.err);
    CHECK_FALSE(result.timed_out);  // socat ends: pkitd closed the connection
    const auto lines = json_lines(result.out);
    REQUIRE(lines.size() == 1);
    const json& reply = lines[0];
    CHECK(reply.contains("id"));
    CHECK(reply["id"].is_null());
    CHECK(reply["ok"] == false);
    CHECK(reply["error"]["code"] == "forbidden");
    // Root is still served.
    CHECK(pkitd.client().command("ping")["ok"] == true);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("socket access: a uid listed in control_users is served") {
    const std::string why = other_uid_unavailable();
    if (!why.empty()) {
        PKIT_SKIP(why);
    }
    TempDir dir;
    REQUIRE(::chmod(dir.str().c_str(), 0755) == 0);
    dir.daemon_config("control_users = [\"nobody\"]\n");
    dir.service("svc", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();

    const auto result = ping_as_nobody(pkitd.socket());
    INFO("stdout:\n" << result.out << "stderr:\n" << result.err);
    CHECK(result.exit_code == 0);
    const auto lines = json_lines(result.out);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0]["id"] == 1);
    CHECK(lines[0]["ok"] == true);
    CHECK(lines[0]["result"]["protocol"] == 1);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE(
    "socket access: control_group makes the socket 0660 of that group, and its members are "
    "served") {
    const std::string why = other_uid_unavailable();
    if (!why.empty()) {
        PKIT_SKIP(why);
    }
    const group* nogroup = ::getgrgid(65534);
    if (nogroup == nullptr) {
        PKIT_SKIP("no group with gid 65534");
    }
    const std::string name = nogroup->gr_name;
    TempDir dir;
    REQUIRE(::chmod(dir.str().c_str(), 0755) == 0);
    dir.daemon_config("control_group = " + toml_str(name) + "\n");
    dir.service("svc", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();

    struct stat st {};
    REQUIRE(::stat(pkitd.socket().c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0660);
    CHECK(st.st_gid == 65534);
    // uid 65534 is in no control list; its primary group 65534 is the control group.
    const auto result = ping_as_nobody(pkitd.socket());
    INFO("stdout:\n" << result.out << "stderr:\n" << result.err);
    CHECK(result.exit_code == 0);
    const auto lines = json_lines(result.out);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0]["ok"] == true);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("socket access: a reload applies changed control_users to the next connections") {
    const std::string why = other_uid_unavailable();
    if (!why.empty()) {
        PKIT_SKIP(why);
    }
    TempDir dir;
    REQUIRE(::chmod(dir.str().c_str(), 0755) == 0);
    dir.service("svc", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    const auto mode = [&] {
        struct stat st {};
        REQUIRE(::stat(pkitd.socket().c_str(), &st) == 0);
        return st.st_mode & 07777;
    };
    const auto reload = [&] {
        json reply = client.request({{"cmd", "reload"}});
        REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
        CHECK(reply["result"]["changed"].empty());  // the service is untouched
    };
    CHECK(mode() == 0600);

    dir.daemon_config("control_users = [\"nobody\"]\n");
    reload();
    CHECK(mode() == 0666);
    auto result = ping_as_nobody(pkitd.socket());
    INFO("stdout:\n" << result.out << "stderr:\n" << result.err);
    auto lines = json_lines(result.out);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0]["ok"] == true);

    dir.daemon_config("control_users = [\"root\"]\n");
    reload();
    CHECK(mode() == 0666);
    result = ping_as_nobody(pkitd.socket());
    lines = json_lines(result.out);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0]["error"]["code"] == "forbidden");

    dir.daemon_config("");
    reload();
    CHECK(mode() == 0600);
    CHECK(pkitd.stop() == 0);
}
