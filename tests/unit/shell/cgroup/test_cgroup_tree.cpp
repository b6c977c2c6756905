// CgroupTree against a fake cgroupfs: a directory of plain files standing in for the
// kernel's. What it writes is read back; what needs the kernel (processes moving,
// cgroup.kill acting) is the integration tests' (test_cgroups.cpp).

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "daemon/shell/cgroup/cgroup_tree.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

namespace {

std::string slurp(const std::string& path) {
    return read_small_file(path).value_or("<missing>");
}

// A fake cgroup directory `dir` with the files pkitd touches.
void fake_cgroup(TempDir& root, const std::string& dir, const std::string& populated) {
    std::filesystem::create_directories(root.path() + "/" + dir);
    for (const char* file : {"cgroup.procs", "cgroup.kill", "cgroup.subtree_control"}) {
        root.write(dir + "/" + file, "");
    }
    root.write(dir + "/cgroup.events", "populated " + populated + "\nfrozen 0\n");
}

}  // namespace

TEST_CASE("a cgroup tree enables the available controllers and makes service cgroups") {
    TempDir root;
    fake_cgroup(root, ".", "1");
    root.write("cgroup.controllers", "cpu io memory pids\n");
    auto tree = CgroupTree::open(root.path(), 0);
    REQUIRE(tree);
    CHECK((*tree)->controllers() == std::vector<std::string>{"cpu", "io", "memory", "pids"});
    // A plain file keeps only the last write, each written at its start.
    CHECK(slurp(root.path() + "/cgroup.subtree_control").starts_with("+pids"));
    CHECK(std::filesystem::is_directory(root.path() + "/_pkitd"));

    auto web = (*tree)->make("web");
    REQUIRE(web);
    CHECK(*web == root.path() + "/web");
    CHECK(std::filesystem::is_directory(*web));
    CHECK((*tree)->make("web") == *web);  // again: the same, no error
    CHECK((*tree)->make("api@1").has_value());
    CHECK_FALSE((*tree)->make("_pkitd").has_value());
    CHECK_FALSE((*tree)->make("a/b").has_value());
}

TEST_CASE("a cgroup that cannot be made says why") {
    TempDir root;
    auto tree = CgroupTree::open(root.path(), 0);
    REQUIRE(tree);
    ::chmod(root.path().c_str(), 0555);
    if (::geteuid() != 0) {
        auto made = (*tree)->make("web");
        REQUIRE_FALSE(made);
        CHECK(made.error().find("Permission denied") != std::string::npos);
    }
    std::filesystem::create_directories(root.path() + "/x");
    ::chmod(root.path().c_str(), 0755);
    root.write("file", "");
    auto under_file = CgroupTree::open(root.path() + "/file", 0);
    REQUIRE_FALSE(under_file);
    CHECK(under_file.error().find("cannot create " + root.path() + "/file/_pkitd") == 0);
}

TEST_CASE("leftover cgroups of a killed pkitd are killed and reused") {
    TempDir root;
    fake_cgroup(root, "old", "1");
    fake_cgroup(root, "empty", "0");
    fake_cgroup(root, "_pkitd", "0");
    auto tree = CgroupTree::open(root.path(), 0);
    REQUIRE(tree);
    CHECK((*tree)->leftovers() == std::vector<std::string>{"old"});
    CHECK(slurp(root.path() + "/old/cgroup.kill") == "1");
    CHECK(slurp(root.path() + "/empty/cgroup.kill").empty());
    CHECK((*tree)->populated("old") == true);
    CHECK((*tree)->populated("empty") == false);
    CHECK_FALSE((*tree)->populated("nothing").has_value());
}

TEST_CASE("cpu usage is read from cpu.stat") {
    TempDir root;
    fake_cgroup(root, "web", "1");
    root.write("web/cpu.stat", "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n");
    auto tree = CgroupTree::open(root.path(), 0);
    REQUIRE(tree);
    CHECK((*tree)->cpu_usage_usec("web") == 2500000U);
    CHECK_FALSE((*tree)->cpu_usage_usec("api").has_value());
}

TEST_CASE("freeze writes cgroup.freeze, frozen reads cgroup.events; leftovers are thawed") {
    TempDir root;
    fake_cgroup(root, "web", "1");
    root.write("web/cgroup.freeze", "1\n");  // a killed pkitd left it paused
    fake_cgroup(root, "kept", "1");
    root.write("kept/cgroup.freeze", "1\n");
    {
        auto adopted = CgroupTree::open(root.path(), 0, true);  // an upgrade: kept as it is
        REQUIRE(adopted);
        CHECK(slurp(root.path() + "/kept/cgroup.freeze") == "1\n");
    }
    auto tree = CgroupTree::open(root.path(), 0);
    REQUIRE(tree);
    // cgroupfs takes each write whole; a plain file keeps what the write did not cover.
    CHECK(slurp(root.path() + "/web/cgroup.freeze").starts_with("0"));
    REQUIRE((*tree)->freeze("web", true));
    CHECK(slurp(root.path() + "/web/cgroup.freeze").starts_with("1"));
    CHECK((*tree)->frozen("web") == false);  // the fake kernel has not frozen it
    root.write("web/cgroup.events", "populated 1\nfrozen 1\n");
    CHECK((*tree)->frozen("web") == true);
    REQUIRE((*tree)->freeze("web", false));
    CHECK(slurp(root.path() + "/web/cgroup.freeze").starts_with("0"));
    CHECK_FALSE((*tree)->freeze("nothing", true));
    CHECK_FALSE((*tree)->frozen("nothing").has_value());
}

}  // namespace pkit::shell::test
