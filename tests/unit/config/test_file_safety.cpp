// Safe reading: only regular files of at most 1 MiB are read, nothing can
// block or grow without bound, and every failure to read DIR or DIR/services is a
// positioned error naming the path and the reason, never "0 services".

#include <sys/stat.h>
#include <unistd.h>
#include "tests/unit/config/config_doctest.hpp"

#include <filesystem>
#include <string>

#include "tests/unit/config/temp_tree.hpp"

using namespace pkit::config;
using namespace pkit::config::test;
using Errors = std::vector<std::string>;
namespace fs = std::filesystem;

namespace {

const std::string k_only_regular = "): only regular files are read";

}  // namespace

TEST_CASE("a FIFO named x.toml is an error at 1:1, and reading it does not block") {
    TempTree tree;
    tree.service("web", "command = [\"web\"]\n");
    fs::create_directories(tree.root() / "services");
    REQUIRE(::mkfifo((tree.root() / "services" / "x.toml").c_str(), 0644) == 0);
    CHECK(tree.errors() ==
          Errors{"services/x.toml:1:1: error: not a regular file (a FIFO" + k_only_regular});
}

TEST_CASE("a service file linked to /dev/zero is an error, not an endless read") {
    TempTree tree;
    fs::create_directories(tree.root() / "services");
    fs::create_symlink("/dev/zero", tree.root() / "services" / "x.toml");
    CHECK(tree.errors() == Errors{"services/x.toml:1:1: error: not a regular file (a character "
                                  "device" +
                                  k_only_regular});
}

TEST_CASE("a directory named x.toml is an error at 1:1") {
    TempTree tree;
    tree.write("services/x.toml/inner", "");
    CHECK(tree.errors() ==
          Errors{"services/x.toml:1:1: error: not a regular file (a directory" + k_only_regular});
}

TEST_CASE("pkitd.toml is held to the same rules") {
    TempTree tree;
    fs::create_symlink("/dev/null", tree.root() / "pkitd.toml");
    CHECK(tree.errors() == Errors{"pkitd.toml:1:1: error: not a regular file (a character "
                                  "device" +
                                  k_only_regular});
}

TEST_CASE("a file over 1 MiB is an error with its size and the limit; 1 MiB exactly is read") {
    TempTree tree;
    // A comment line padded to the limit: valid TOML of exactly k_max_file_bytes.
    std::string head = "command = [\"web\"]\n#";
    std::string exact = head + std::string(k_max_file_bytes - head.size() - 1, 'x') + "\n";
    REQUIRE(exact.size() == k_max_file_bytes);
    tree.service("web", exact);
    CHECK(tree.errors().empty());

    tree.service("big", exact + "#\n");
    CHECK(tree.errors() == Errors{"services/big.toml:1:1: error: the file is 1048578 bytes, over "
                                  "the limit of 1048576 bytes (1 MiB)"});
}

TEST_CASE("a services symlink that loops is an error naming the directory, not 0 services") {
    TempTree tree;
    fs::create_symlink("services", tree.root() / "services");
    CHECK(tree.errors() == Errors{"services:1:1: error: cannot read the services directory: Too "
                                  "many levels of symbolic links"});
}

TEST_CASE("services that is not a directory is an error naming it") {
    TempTree tree;
    tree.write("services", "a file");
    CHECK(tree.errors() ==
          Errors{"services:1:1: error: cannot read the services directory: Not a directory"});
}

TEST_CASE("a configuration directory that is a symlink loop is an error naming it") {
    TempTree tree;
    fs::create_symlink("conf", tree.root() / "conf");
    auto result = load_tree(tree.root() / "conf", test_options());
    REQUIRE_FALSE(result.has_value());
    REQUIRE(result.error().size() == 1);
    CHECK(result.error()[0].to_string() ==
          (tree.root() / "conf").string() +
              ":1:1: error: cannot read the configuration directory: Too many levels of symbolic "
              "links");
}

TEST_CASE("an unreadable services directory or DIR is an error naming it") {
    if (::geteuid() == 0) {
        // Root reads through any mode bits; this case needs an ordinary user.
        MESSAGE("skipped: running as root, permissions cannot refuse a read");
        return;
    }
    TempTree tree;
    tree.service("web", "command = [\"web\"]\n");
    fs::path services = tree.root() / "services";
    REQUIRE(::chmod(services.c_str(), 0) == 0);
    CHECK(tree.errors() ==
          Errors{"services:1:1: error: cannot read the services directory: Permission denied"});
    REQUIRE(::chmod(services.c_str(), 0755) == 0);

    fs::path dir = tree.root() / "conf";
    fs::create_directories(dir / "services");
    REQUIRE(::chmod(dir.c_str(), 0600) == 0);  // readable, not searchable
    auto result = load_tree(dir, test_options());
    REQUIRE(::chmod(dir.c_str(), 0755) == 0);
    REQUIRE_FALSE(result.has_value());
    REQUIRE(result.error().size() == 1);
    CHECK(result.error()[0].to_string() ==
          dir.string() + ":1:1: error: cannot read the configuration directory: Permission denied");
}

TEST_CASE("a dangling pkitd.toml link is an error; a missing one is the defaults") {
    TempTree tree;
    fs::create_symlink("nowhere.toml", tree.root() / "pkitd.toml");
    CHECK(tree.errors() ==
          Errors{"pkitd.toml:1:1: error: cannot read the file: No such file or directory"});
}

TEST_CASE("a chain of 10,000 services, each after the one before, loads") {
    TempTree tree;
    const int n = 10000;
    auto name = [](int i) {
        std::string digits = std::to_string(i);
        return "s" + std::string(5 - digits.size(), '0') + digits;
    };
    for (int i = 0; i < n; ++i) {
        std::string content = "command = [\"x\"]\n";
        if (i > 0) {
            content += "after = [\"" + name(i - 1) + "\"]\n";
        }
        tree.service(name(i), content);
    }
    auto result = tree.load();
    REQUIRE(result.has_value());
    REQUIRE(result->services.size() == static_cast<std::size_t>(n));
    CHECK(result->services.back().after == std::vector<std::string>{name(n - 2)});

    // Closing the chain into one cycle of 10,000: one error, the whole cycle named.
    tree.service(name(0), "command = [\"x\"]\nafter = [\"" + name(n - 1) + "\"]\n");
    auto errors = tree.errors();
    REQUIRE(errors.size() == 1);
    CHECK(
        errors[0].starts_with("services/s00000.toml:2:1: error: dependency cycle: s00000 -> "
                              "s09999 -> s09998 -> "));
    CHECK(errors[0].ends_with(" -> s00001 -> s00000"));
}
