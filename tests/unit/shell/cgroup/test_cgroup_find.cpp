// Finding pkitd's cgroup: mountinfo and /proc/self/cgroup parsed, the cgroup located
// under its mount, and the choice of auto / off / required, table by table.

#include <string>
#include <vector>

#include "daemon/shell/cgroup/cgroup_find.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

TEST_CASE("cgroup2 mounts are found in mountinfo wherever they are mounted") {
    // This machine's kind: a hybrid layout, the v2 tree at a non-standard path.
    const std::string hybrid =
        "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
        "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
        "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:5 - cgroup2 cgroup2 rw\n";
    CHECK(parse_cgroup2_mounts(hybrid) ==
          std::vector<Cgroup2Mount>{{"/", "/sys/fs/cgroup/unified", false}});
    // A container's: its namespace root, read-only, a space in the path escaped.
    const std::string container =
        "600 500 0:30 /docker/abc /sys/fs/my\\040cg ro,nosuid - cgroup2 cgroup rw\n"
        "garbage line\n"
        "\n";
    CHECK(parse_cgroup2_mounts(container) ==
          std::vector<Cgroup2Mount>{{"/docker/abc", "/sys/fs/my cg", true}});
    CHECK(parse_cgroup2_mounts("").empty());
    CHECK(parse_cgroup2_mounts("1 2 0:1 / /x rw - cgroup cgroup rw,cpu\n").empty());
}

TEST_CASE("the unified path is the 0:: line of /proc/self/cgroup") {
    CHECK(parse_unified_path("9:name=systemd:/\n4:memory:/x\n0::/\n") == "/");
    CHECK(parse_unified_path("0::/system.slice/pkit.service\n") == "/system.slice/pkit.service");
    CHECK_FALSE(parse_unified_path("4:memory:/x\n3:cpu:/\n").has_value());  // v1 only
    CHECK_FALSE(parse_unified_path("0::/gone (deleted)\n").has_value());
    CHECK_FALSE(parse_unified_path("").has_value());
}

TEST_CASE("a cgroup is located under the mount that shows it") {
    std::vector<Cgroup2Mount> mounts{{"/", "/sys/fs/cgroup/unified", false}};
    CHECK(locate_cgroup(mounts, "/")->dir == "/sys/fs/cgroup/unified");
    CHECK(locate_cgroup(mounts, "/a/b")->dir == "/sys/fs/cgroup/unified/a/b");
    // A bind mount of a sub-tree shows only what is below its root.
    std::vector<Cgroup2Mount> bound{{"/docker/abc", "/sys/fs/cgroup", false}};
    CHECK(locate_cgroup(bound, "/docker/abc")->dir == "/sys/fs/cgroup");
    CHECK(locate_cgroup(bound, "/docker/abc/x")->dir == "/sys/fs/cgroup/x");
    CHECK_FALSE(locate_cgroup(bound, "/docker/abcd").has_value());
    CHECK_FALSE(locate_cgroup(bound, "/").has_value());
    // A read-write mount wins over a read-only one; a read-only one is said so.
    std::vector<Cgroup2Mount> both{{"/", "/ro", true}, {"/", "/rw", false}};
    CHECK(locate_cgroup(both, "/s")->dir == "/rw/s");
    auto read_only = locate_cgroup({{"/", "/ro", true}}, "/s");
    REQUIRE(read_only);
    CHECK(read_only->read_only);
    CHECK(locate_cgroup({{"/", "/", false}}, "/s")->dir == "/s");
}

TEST_CASE("auto uses only a cgroup that is pkitd's own; required any writable one") {
    using config::CgroupMode;
    CgroupFacts usable{.dir = "/cg/unit", .writable = true};
    auto with = [&](auto change) {
        CgroupFacts facts = usable;
        change(facts);
        return facts;
    };
    const CgroupFacts delegated = with([](CgroupFacts& f) { f.delegated = true; });
    const CgroupFacts pid1_in_namespace = with([](CgroupFacts& f) { f.pid1 = true; });
    const CgroupFacts pid1_at_root = with([](CgroupFacts& f) {
        f.pid1 = true;
        f.hierarchy_root = true;
    });
    const CgroupFacts login_session = usable;  // neither PID 1 nor delegated
    const CgroupFacts read_only = with([](CgroupFacts& f) {
        f.delegated = true;
        f.writable = false;
        f.not_writable = "mounted read-only";
    });
    const CgroupFacts taken = with([](CgroupFacts& f) {
        f.delegated = true;
        f.other_pkitd = true;
    });
    const CgroupFacts none{.missing = "no cgroup v2 hierarchy in /proc/self/cgroup"};

    struct Row {
        CgroupMode mode;
        CgroupFacts facts;
        bool enabled;
        std::string reason_has;
    };
    const std::vector<Row> rows{
        {CgroupMode::automatic, delegated, true, ""},
        {CgroupMode::automatic, pid1_in_namespace, true, ""},
        {CgroupMode::automatic, pid1_at_root, false, "hierarchy's root"},
        {CgroupMode::automatic, login_session, false, "not delegated"},
        {CgroupMode::automatic, read_only, false, "not writable: mounted read-only"},
        {CgroupMode::automatic, taken, false, "another pkitd"},
        {CgroupMode::automatic, none, false, "no cgroup v2 hierarchy"},
        {CgroupMode::required, login_session, true, ""},
        {CgroupMode::required, pid1_at_root, true, ""},
        {CgroupMode::required, read_only, false, "not writable"},
        {CgroupMode::required, taken, false, "another pkitd"},
        {CgroupMode::required, none, false, "no cgroup v2 hierarchy"},
        {CgroupMode::off, delegated, false, "cgroups = \"off\""},
    };
    for (const Row& row : rows) {
        CAPTURE(config::to_string(row.mode));
        CAPTURE(row.reason_has);
        CgroupChoice choice = choose_cgroup(row.mode, row.facts);
        CHECK(choice.enabled == row.enabled);
        if (row.enabled) {
            CHECK(choice.path == "/cg/unit");
            CHECK(choice.reason.empty());
        } else {
            CHECK(choice.path.empty());
            CHECK(choice.reason.find(row.reason_has) != std::string::npos);
        }
    }
}

TEST_CASE("cgroup.events and keyed files are read by key") {
    CHECK(parse_populated("populated 1\nfrozen 0\n") == true);
    CHECK(parse_populated("populated 0\nfrozen 0\n") == false);
    CHECK_FALSE(parse_populated("frozen 0\n").has_value());
    const std::string cpu = "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n";
    CHECK(parse_keyed(cpu, "usage_usec") == 1500U);
    CHECK(parse_keyed(cpu, "system_usec") == 500U);
    CHECK_FALSE(parse_keyed(cpu, "nr_periods").has_value());
    CHECK_FALSE(parse_keyed("usage_usec x\n", "usage_usec").has_value());
    CHECK(parse_keyed("low 0\nhigh 0\nmax 0\noom 2\noom_kill 1\n", "oom_kill") == 1U);
}

}  // namespace pkit::shell::test
