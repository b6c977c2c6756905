// ListenSockets (listen/listen_sockets.hpp, SPEC §14): a socket is known by its kind and
// address, so a tree that keeps an entry keeps its socket; stage() binds what is new
// and closes nothing, commit() closes what the new tree dropped, and a failed bind is a
// positioned error that leaves everything as it was.

#include <sys/stat.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "daemon/shell/listen/listen_sockets.hpp"
#include "tests/unit/core/fake.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

namespace {

config::ServiceSpec listening(const std::string& name, std::vector<std::string> paths) {
    config::ServiceSpec spec = core::test::spec(name);
    std::vector<config::ListenSpec> entries;
    for (const std::string& path : paths) {
        config::ListenSpec entry;
        entry.kind = config::ListenKind::unix_;
        entry.address = path;
        entries.push_back(entry);
    }
    spec.listen = entries;
    return spec;
}

ino_t inode_of(int fd) {
    struct stat st {};
    REQUIRE(::fstat(fd, &st) == 0);
    return st.st_ino;
}

}  // namespace

TEST_CASE("an entry kept across trees keeps its socket; a dropped one is closed at commit") {
    TempDir dir;
    const std::string a = dir.path() + "/a.sock";
    const std::string b = dir.path() + "/b.sock";
    ListenSockets sockets;
    config::ServiceSpec first = listening("web", {a, b});
    auto staged = sockets.stage({&first});
    REQUIRE(staged.has_value());
    sockets.commit(std::move(*staged));
    std::vector<ListenFd> fds = sockets.fds_of(first);
    REQUIRE(fds.size() == 2);
    const ino_t kept = inode_of(fds[0].fd);

    config::ServiceSpec second = listening("web", {a});
    auto restaged = sockets.stage({&second});
    REQUIRE(restaged.has_value());
    CHECK(std::filesystem::exists(b));  // nothing closed before commit
    sockets.commit(std::move(*restaged));
    std::vector<ListenFd> after = sockets.fds_of(second);
    REQUIRE(after.size() == 1);
    CHECK(inode_of(after[0].fd) == kept);
    CHECK_FALSE(std::filesystem::exists(b));  // dropped: closed and unlinked
    CHECK(sockets.kept().size() == 1);
}

TEST_CASE("a socket that cannot be bound is a positioned error and nothing changes") {
    TempDir dir;
    const std::string a = dir.path() + "/a.sock";
    ListenSockets sockets;
    config::ServiceSpec first = listening("web", {a});
    auto staged = sockets.stage({&first});
    REQUIRE(staged.has_value());
    sockets.commit(std::move(*staged));

    config::ServiceSpec bad = listening("web", {a, dir.path() + "/missing/dir/b.sock"});
    bad.file = "services/web.toml";
    auto refused = sockets.stage({&bad});
    REQUIRE_FALSE(refused.has_value());
    REQUIRE(refused.error().size() == 1);
    CHECK(refused.error()[0].to_string().find("services/web.toml") != std::string::npos);
    CHECK(sockets.fds_of(first).size() == 1);  // the running tree's socket is still there
    CHECK(std::filesystem::exists(a));
}

}  // namespace pkit::shell::test
