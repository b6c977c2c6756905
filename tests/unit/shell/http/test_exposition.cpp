// A finished /metrics body in a sealed memfd (what connections send with sendfile):
// the file holds exactly the text, nothing can change it, and the text is held once.

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <string>

#include "daemon/shell/http/exposition.hpp"

namespace pkit::shell::http {
namespace {

TEST_CASE("exposition: the body is in a sealed memfd that holds exactly its bytes") {
    std::string text;
    for (int i = 0; i < 20'000; ++i) {
        text += "pkit_service_up{service=\"s" + std::to_string(i) + "\"} 1\n";
    }
    const Exposition body(text);
    CHECK(body.bytes() == text);
    CHECK(body.size() == text.size());
    REQUIRE(body.fd() >= 0);

    std::string read(text.size() + 1, '\0');
    ssize_t n = ::pread(body.fd(), read.data(), read.size(), 0);
    REQUIRE(n == static_cast<ssize_t>(text.size()));
    read.resize(static_cast<std::size_t>(n));
    CHECK(read == text);

    const int seals = ::fcntl(body.fd(), F_GET_SEALS);
    CHECK((seals & F_SEAL_WRITE) != 0);
    CHECK((seals & F_SEAL_SHRINK) != 0);
    CHECK((seals & F_SEAL_GROW) != 0);
    CHECK((seals & F_SEAL_SEAL) != 0);
    CHECK(::pwrite(body.fd(), "x", 1, 0) < 0);
    CHECK(::ftruncate(body.fd(), 0) != 0);
    CHECK((::fcntl(body.fd(), F_GETFD) & FD_CLOEXEC) != 0);
}

TEST_CASE("exposition: appended in pieces as it is rendered, then sealed") {
    Exposition body;
    std::string text;
    for (int i = 0; i < 3'000; ++i) {
        std::string piece = "pkit_service_runs_total{service=\"s" + std::to_string(i) + "\"} 1\n";
        body.append(piece);
        text += piece;
    }
    CHECK(body.fd() < 0);  // not before it is sealed
    body.seal();
    REQUIRE(body.fd() >= 0);
    CHECK(body.bytes() == text);
    CHECK((::fcntl(body.fd(), F_GET_SEALS) & F_SEAL_WRITE) != 0);
}

TEST_CASE("exposition: a file that cannot grow, or no file at all, leaves the body in memory") {
    const std::string text(2 * 1024 * 1024, 'x');
    SUBCASE("the file is refused its second megabyte") {
        // RLIMIT_FSIZE applies to a memfd as to any file: the write fails there (EFBIG,
        // with SIGXFSZ ignored) as it would at a cgroup's memory limit.
        rlimit saved{};
        REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved) == 0);
        auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
        rlimit small = saved;
        small.rlim_cur = 1024 * 1024;
        REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
        Exposition body;
        body.append(std::string_view(text).substr(0, 1024));
        body.append(std::string_view(text).substr(1024));
        body.seal();
        ::setrlimit(RLIMIT_FSIZE, &saved);
        std::signal(SIGXFSZ, old_handler);
        CHECK(body.fd() < 0);
        CHECK(body.bytes() == text);
    }
    SUBCASE("no descriptor left for the file") {
        rlimit saved{};
        REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved) == 0);
        rlimit none = saved;
        none.rlim_cur = 3;  // every new descriptor is refused (EMFILE)
        REQUIRE(::setrlimit(RLIMIT_NOFILE, &none) == 0);
        Exposition body(text);
        ::setrlimit(RLIMIT_NOFILE, &saved);
        CHECK(body.fd() < 0);
        CHECK(body.bytes() == text);
    }
}

TEST_CASE("exposition: an empty body has no file") {
    const Exposition body("");
    CHECK(body.bytes().empty());
    CHECK(body.fd() < 0);
}

}  // namespace
}  // namespace pkit::shell::http
