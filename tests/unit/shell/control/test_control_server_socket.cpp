// Opening the control socket (stale, live and foreign files at its path, its mode)
// and the credential rule of SPEC §9.

#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "daemon/shell/control/control_server_socket.hpp"
#include "tests/unit/shell/control/test_control_server_support.hpp"

namespace pkit::shell::test {

namespace {

unsigned mode_of(const std::string& path) {
    struct stat info {};
    REQUIRE(::stat(path.c_str(), &info) == 0);
    return info.st_mode & 07777;
}

// Leaves a socket file at `path` that nothing listens on, as a crashed pkitd would.
void make_stale_socket(const std::string& path) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    ::close(fd);
}

}  // namespace

TEST_CASE("the socket's directory is created and the socket is 0600 by default") {
    TestLoop loop;
    TempDir dir;
    FakeHandler handler;
    std::string path = dir.path() + "/run/pkit/pkitd.sock";
    {
        auto server = open_server(loop, path, handler);
        CHECK(mode_of(dir.path() + "/run/pkit") == 0755);
        CHECK(mode_of(path) == 0600);
        CHECK(std::filesystem::is_socket(path));
    }
    CHECK_FALSE(std::filesystem::exists(path));
    CHECK(loop.close() == 0);
}

TEST_CASE("a control group makes the socket 0660 of that group; control users 0666") {
    TestLoop loop;
    TempDir dir;
    FakeHandler handler;
    std::string path = dir.path() + "/pkitd.sock";
    {
        SocketOptions group_only;
        group_only.allowed_gid = ::getegid();
        auto server = open_server(loop, path, handler, group_only);
        CHECK(mode_of(path) == 0660);
    }
    {
        SocketOptions users;
        users.allowed_uids = {12345};
        users.allowed_gid = ::getegid();
        auto server = open_server(loop, path, handler, users);
        CHECK(mode_of(path) == 0666);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("access that changes nothing writes nothing: no error on a read-only file system") {
    TempDir dir;
    std::string path = dir.path() + "/pkitd.sock";
    make_stale_socket(path);
    SocketOptions options;
    options.path = path;
    REQUIRE(control_socket::apply_mode(options).has_value());
    REQUIRE(mode_of(path) == 0600);
    // In a child of its own mount namespace, the directory bind-mounted read-only over
    // itself: what a reload with an unchanged pkitd.toml applies must not fail there,
    // while a real change does (proving the mount is read-only).
    pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        if (::unshare(CLONE_NEWNS) != 0 ||
            ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
            ::mount(dir.path().c_str(), dir.path().c_str(), nullptr, MS_BIND, nullptr) != 0 ||
            ::mount(nullptr, dir.path().c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY,
                    nullptr) != 0) {
            ::_exit(3);
        }
        bool same_ok = control_socket::apply_mode(options).has_value();
        SocketOptions changed = options;
        changed.allowed_gid = ::getegid() + 1;
        auto refused = control_socket::apply_mode(changed);
        bool change_fails = !refused && refused.error().find("its group") != std::string::npos;
        ::_exit(same_ok ? (change_fails ? 0 : 2) : 1);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    // 3: no mount namespace here (not root); the case needs one.
    REQUIRE_MESSAGE(WEXITSTATUS(status) != 3, "cannot bind-mount read-only (needs root)");
    CHECK_MESSAGE(WEXITSTATUS(status) != 1, "unchanged access failed on a read-only mount");
    CHECK_MESSAGE(WEXITSTATUS(status) != 2,
                  "a changed group did not fail: the mount is not read-only");
    CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("a stale socket at the path is replaced") {
    TestLoop loop;
    TempDir dir;
    FakeHandler handler;
    std::string path = dir.path() + "/pkitd.sock";
    make_stale_socket(path);
    {
        auto server = open_server(loop, path, handler);
        RawClient client(loop, path);
        REQUIRE(client.write("{\"cmd\":\"ping\"}\n"));
        CHECK(client.read_line().has_value());
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("a socket a live server answers on is refused, and left alone") {
    TestLoop loop;
    TempDir dir;
    FakeHandler handler;
    std::string path = dir.path() + "/pkitd.sock";
    {
        auto first = open_server(loop, path, handler);
        FakeHandler other;
        auto second = ControlServer::open(loop.get(), SocketOptions{.path = path}, other);
        REQUIRE_FALSE(second.has_value());
        CHECK(second.error().find("already answers on " + path) != std::string::npos);
        RawClient client(loop, path);
        REQUIRE(client.write("{\"cmd\":\"ping\"}\n"));
        CHECK(client.read_line().has_value());
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("a path that is not a socket is refused and not removed") {
    TestLoop loop;
    TempDir dir;
    FakeHandler handler;
    std::string path = dir.write("pkitd.sock", "precious\n");
    auto opened = ControlServer::open(loop.get(), SocketOptions{.path = path}, handler);
    REQUIRE_FALSE(opened.has_value());
    CHECK(opened.error() == path + " exists and is not a socket");
    CHECK(std::filesystem::is_regular_file(path));

    std::filesystem::create_directory(dir.path() + "/adir");
    auto on_dir =
        ControlServer::open(loop.get(), SocketOptions{.path = dir.path() + "/adir"}, handler);
    CHECK_FALSE(on_dir.has_value());
    CHECK(loop.close() == 0);
}

TEST_CASE("a path too long for a Unix socket is an error, not a truncation") {
    TestLoop loop;
    FakeHandler handler;
    auto opened = ControlServer::open(
        loop.get(), SocketOptions{.path = "/tmp/" + std::string(200, 'p')}, handler);
    REQUIRE_FALSE(opened.has_value());
    CHECK(opened.error().find("too long") != std::string::npos);
    CHECK(loop.close() == 0);
}

TEST_CASE("an unauthorised peer gets one forbidden reply and is disconnected") {
    TestLoop loop;
    TempDir dir;
    FakeHandler handler;
    std::string path = dir.path() + "/pkitd.sock";
    SocketOptions options;
    options.trust_root_and_self = false;  // the test runs as root or as pkitd's own user
    options.allowed_uids = {::geteuid() + 1};
    {
        auto server = open_server(loop, path, handler, options);
        RawClient client(loop, path);
        client.write("{\"id\":1,\"cmd\":\"ping\"}\n");
        auto reply = client.read_line();
        REQUIRE(reply.has_value());
        auto value = parse_line(*reply);
        CHECK(value["id"].is_null());
        CHECK(value["ok"] == false);
        CHECK(value["error"]["code"] == "forbidden");
        CHECK(client.wait_closed());
        client.shutdown_write();
        CHECK(handler.requests == 0);
        CHECK(loop.run_until([&] { return server->connection_count() == 0; }));
        CHECK(handler.disconnected.empty());
    }
    CHECK(loop.close() == 0);
}

namespace {

// A server that refuses everyone (the test runs as root or as the server's own user).
struct RefusingServer {
    TestLoop loop;
    TempDir dir;
    FakeHandler handler;
    std::string path = dir.path() + "/pkitd.sock";
    std::unique_ptr<ControlServer> server;

    RefusingServer() {
        SocketOptions options;
        options.trust_root_and_self = false;
        server = open_server(loop, path, handler, options);
    }
    ~RefusingServer() {
        server.reset();
        CHECK(loop.close() == 0);
    }
};

}  // namespace

TEST_CASE("a refused peer that writes after its reply came still reads it, then the end") {
    RefusingServer f;
    auto& loop = f.loop;
    auto& server = f.server;
    {
        RawClient client(loop, f.path);
        // pkitd answers at accept and shuts down its side before the request is sent
        // (pkitctl's order: connect, write, read). The write must not fail with EPIPE.
        REQUIRE(client.wait_closed());
        CHECK(client.write("{\"id\":1,\"cmd\":\"ping\"}\n"));
        CHECK(server->connection_count() == 1);  // lingering for the client's end
        client.shutdown_write();
        // Its end of file closes the connection at once, long before the linger bound.
        CHECK(loop.run_until([&] { return server->connection_count() == 0; }, 1s));
        CHECK(f.handler.requests == 0);
    }
}

TEST_CASE("a refused peer that never ends is closed after the linger bound") {
    auto started = std::chrono::steady_clock::now();
    RefusingServer f;
    auto& loop = f.loop;
    auto& server = f.server;
    {
        RawClient quiet(loop, f.path);
        RawClient flooding(loop, f.path);
        REQUIRE(quiet.read_line().has_value());
        REQUIRE(flooding.read_line().has_value());
        // A client sending without end is cut off by the byte bound (4 MiB)...
        CHECK_FALSE(flooding.write(std::string(16 * 1024 * 1024, 'x')));
        CHECK(server->connection_count() == 1);
        // ...and one that stays silent by the time bound (2 s after its refusal).
        CHECK(loop.run_until([&] { return server->connection_count() == 0; }, 10s));
        CHECK(std::chrono::steady_clock::now() - started >= 1900ms);
        CHECK(quiet.wait_closed());
    }
}

TEST_CASE("control users and control group members are served") {
    TestLoop loop;
    TempDir dir;
    FakeHandler handler;
    std::string path = dir.path() + "/pkitd.sock";
    SocketOptions by_uid;
    by_uid.trust_root_and_self = false;
    by_uid.allowed_uids = {::geteuid()};
    SocketOptions by_gid;
    by_gid.trust_root_and_self = false;
    by_gid.allowed_gid = ::getegid();
    for (const auto& options : {by_uid, by_gid}) {
        auto server = open_server(loop, path, handler, options);
        RawClient client(loop, path);
        REQUIRE(client.write("{\"id\":1,\"cmd\":\"ping\"}\n"));
        auto reply = client.read_line();
        REQUIRE(reply.has_value());
        CHECK(parse_line(*reply)["ok"] == true);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("the credential rule: root, self, listed users, group by primary or supplementary") {
    SocketOptions options;
    options.allowed_uids = {1001};
    options.allowed_gid = 500;
    uid_t self = 900;
    CHECK(is_authorized({.uid = 0, .gid = 0}, options, self));
    CHECK(is_authorized({.uid = 900, .gid = 900}, options, self));
    CHECK(is_authorized({.uid = 1001, .gid = 1001}, options, self));
    CHECK(is_authorized({.uid = 1002, .gid = 500}, options, self));
    CHECK(is_authorized({.uid = 1002, .gid = 1002, .groups = {20, 500}}, options, self));
    CHECK_FALSE(is_authorized({.uid = 1002, .gid = 1002, .groups = {20, 501}}, options, self));

    SocketOptions strict;
    strict.trust_root_and_self = false;
    CHECK_FALSE(is_authorized({.uid = 0, .gid = 0}, strict, 0));
    SocketOptions plain;
    CHECK_FALSE(is_authorized({.uid = 1002, .gid = 500}, plain, self));
}

}  // namespace pkit::shell::test
