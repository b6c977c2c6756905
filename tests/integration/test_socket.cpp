// The control socket at start-up and exit (SPEC §9, §1 exit statuses): created with
// its directory, mode 0600, a stale socket replaced, a path that is not a socket
// refused with exit 3, removed on exit.

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// Leaves a socket file at `path` that nothing listens on (a pkitd that was killed).
void stale_socket(const std::string& path) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    ::close(fd);
}

}  // namespace

TEST_CASE("the socket is created with mode 0600 and removed on exit") {
    TempDir dir;
    dir.service("svc", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    struct stat st {};
    REQUIRE(::stat(pkitd.socket().c_str(), &st) == 0);
    CHECK(S_ISSOCK(st.st_mode));
    CHECK((st.st_mode & 07777) == 0600);
    CHECK(pkitd.stop() == 0);
    CHECK_FALSE(fs::exists(pkitd.socket()));
}

TEST_CASE("a missing socket directory is created") {
    TempDir dir;
    dir.service("svc", sh_command("exec sleep 1000"));
    const std::string socket = dir.file("run/pkit/pkitd.sock");
    Daemon pkitd(dir, {.socket = socket});
    pkitd.wait_ready();
    CHECK(fs::is_socket(socket));
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("a stale socket that nothing answers on is replaced") {
    TempDir dir;
    dir.service("svc", sh_command("exec sleep 1000"));
    stale_socket(dir.file("pkitd.sock"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("a socket path that is not a socket makes pkitd exit 3 without starting anything") {
    TempDir dir;
    dir.service("svc", sh_command("touch " + dir.file("started") + "; exec sleep 1000"));
    write_file(dir.path() / "pkitd.sock", "a regular file\n");
    Daemon pkitd(dir);
    const auto status = pkitd.wait_exit(10s);
    CHECK_MESSAGE(status == 3, "log:\n" << pkitd.log());
    CHECK(fs::is_regular_file(dir.path() / "pkitd.sock"));  // left as it was
    CHECK_FALSE(fs::exists(dir.file("started")));
}
