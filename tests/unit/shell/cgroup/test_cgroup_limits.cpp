// [resources] limits: what each key writes, written to a fake cgroupfs where the
// controllers are enabled, and reported not applied (with the reason) where not.

#include <filesystem>
#include <string>

#include "daemon/shell/cgroup/cgroup_limits.hpp"
#include "tests/unit/shell/cgroup/fake_cgroupfs.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

namespace {

config::ResourceLimits every_limit_set() {
    config::ResourceLimits limits;
    limits.memory_max = 256ULL << 20;
    limits.memory_high = 200ULL << 20;
    limits.cpu_max = 0.5;
    limits.cpu_weight = 200;
    limits.pids_max = 64;
    limits.io_weight = 50;
    return limits;
}

// ROOT and ROOT/web's files.
std::unique_ptr<CgroupTree> fake_limit_tree(FakeCgroupfs& root) {
    root.add("web", false);
    return root.open();
}

std::string read_back(const std::string& path) {
    return read_small_file(path).value_or("<missing>");
}

}  // namespace

TEST_CASE("each limit writes its cgroup file; a removed one gets its default back") {
    CHECK(limit_writes({}).empty());
    CHECK(limit_writes(every_limit_set()) ==
          std::vector<LimitWrite>{{"cpu_max", "cpu", "cpu.max", "50000 100000"},
                                  {"cpu_weight", "cpu", "cpu.weight", "200"},
                                  {"io_weight", "io", "io.weight", "default 50"},
                                  {"memory_high", "memory", "memory.high", "209715200"},
                                  {"memory_max", "memory", "memory.max", "268435456"},
                                  {"pids_max", "pids", "pids.max", "64"}});
    config::ResourceLimits only_memory;
    only_memory.memory_max = 1ULL << 30;
    CHECK(limit_writes(only_memory, every_limit_set()) ==
          std::vector<LimitWrite>{{"cpu_max", "cpu", "cpu.max", "max 100000"},
                                  {"cpu_weight", "cpu", "cpu.weight", "100"},
                                  {"io_weight", "io", "io.weight", "default 100"},
                                  {"memory_high", "memory", "memory.high", "max"},
                                  {"memory_max", "memory", "memory.max", "1073741824"},
                                  {"pids_max", "pids", "pids.max", "max"}});
}

TEST_CASE("limits are written where their controller is enabled, else reported") {
    FakeCgroupfs root("cpu memory");
    auto tree = fake_limit_tree(root);
    LimitReport report = apply_limits_to(*tree, "web", every_limit_set());
    CHECK(report.applied ==
          std::vector<std::string>{"cpu_max", "cpu_weight", "memory_high", "memory_max"});
    const std::string why = "controller is not available in " + root.path();
    CHECK(report.not_applied ==
          std::vector<std::pair<std::string, std::string>>{{"io_weight", "the io " + why},
                                                           {"pids_max", "the pids " + why}});
    CHECK(read_back(root.path() + "/web/memory.max") == "268435456");
    CHECK(read_back(root.path() + "/web/cpu.max") == "50000 100000");
    CHECK(read_back(root.path() + "/web/pids.max").empty());
    CHECK(describe_not_applied(report) ==
          "io_weight (the io " + why + "); pids_max (the pids " + why + ")");
}

TEST_CASE("a limit whose file cannot be written is reported with the reason") {
    FakeCgroupfs root("memory");
    auto tree = fake_limit_tree(root);
    std::filesystem::remove(root.path() + "/web/memory.max");
    config::ResourceLimits limits;
    limits.memory_max = 64ULL << 20;
    LimitReport report = apply_limits_to(*tree, "web", limits);
    CHECK(report.applied.empty());
    REQUIRE(report.not_applied.size() == 1);
    CHECK(report.not_applied[0].second == "cannot write memory.max: No such file or directory");
}

TEST_CASE("without cgroups every limit set is reported not applied") {
    LimitReport report = limits_not_applied(every_limit_set(), "cgroups not used: off");
    CHECK(report.applied.empty());
    CHECK(report.not_applied.size() == 6);
    CHECK(report.not_applied[0] ==
          std::pair<std::string, std::string>{"cpu_max", "cgroups not used: off"});
}

TEST_CASE("--check warns at each key whose controller is missing, or without cgroups") {
    TempDir dir;
    const std::string file = dir.write("web.toml",
                                       "command = [\"/bin/true\"]\n"
                                       "[resources]\n"
                                       "  memory_max = \"256MiB\"\n"
                                       "cpu_max=0.5\n");
    config::Tree tree;
    config::ServiceSpec web;
    web.name = "web";
    web.file = file;
    web.resources.edit().memory_max = 256ULL << 20;
    web.resources.edit().cpu_max = 0.5;
    config::ServiceSpec instance = web;  // web@2: the same file, warned once
    instance.name = "web@2";
    config::ServiceSpec plain;
    plain.name = "plain";
    plain.file = file + ".none";
    tree.services = {web, instance, plain};

    auto warnings = limit_warnings(tree, CgroupChoice{true, "/cg", ""}, {"cpu", "pids"});
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].to_string() == file +
                                         ":3:3: warning: resources.memory_max: not applied: the "
                                         "memory controller is not available in /cg");
    CHECK(warnings[0].warning);
    CHECK(limit_warnings(tree, CgroupChoice{true, "/cg", ""}, {"cpu", "memory"}).empty());

    warnings = limit_warnings(tree, CgroupChoice{false, "", "cgroups = \"off\""}, {});
    REQUIRE(warnings.size() == 2);
    CHECK(warnings[0].to_string() ==
          file +
              ":4:1: warning: resources.cpu_max: not applied: cgroups not used: cgroups = \"off\"");
    CHECK(warnings[1].line == 3);

    // With cgroups = "required" the same keys are configuration errors (SPEC §15), but
    // only where a cgroup is in use: none at all is pkitd's exit 3, not a key's error.
    CHECK(required_limit_errors(tree, CgroupChoice{true, "/cg", ""}, {"cpu", "pids"}).empty());
    tree.daemon.cgroups = config::CgroupMode::required;
    auto errors = required_limit_errors(tree, CgroupChoice{true, "/cg", ""}, {"cpu", "pids"});
    REQUIRE(errors.size() == 1);
    CHECK_FALSE(errors[0].warning);
    CHECK(errors[0].to_string() ==
          file +
              ":3:3: error: resources.memory_max: cannot be applied: the memory "
              "controller is not available in /cg (cgroups = \"required\")");
    CHECK(required_limit_errors(tree, CgroupChoice{true, "/cg", ""}, {"cpu", "memory"}).empty());
    CHECK(required_limit_errors(tree, CgroupChoice{false, "", "read-only"}, {}).empty());
}

}  // namespace pkit::shell::test
