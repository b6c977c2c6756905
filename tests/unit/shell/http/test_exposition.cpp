// A finished /metrics body in a sealed memfd (what connections send with sendfile):
// the file holds exactly the text, nothing can change it, and the text is held once.

#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

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

TEST_CASE("exposition: an empty body has no file") {
    const Exposition body("");
    CHECK(body.bytes().empty());
    CHECK(body.fd() < 0);
}

}  // namespace
}  // namespace pkit::shell::http
