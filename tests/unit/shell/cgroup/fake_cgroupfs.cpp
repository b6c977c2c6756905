#include "tests/unit/shell/cgroup/fake_cgroupfs.hpp"

#include <filesystem>

namespace pkit::shell::test {

FakeCgroupfs::FakeCgroupfs(const std::string& controllers) {
    m_root.write("cgroup.controllers", controllers + "\n");
    m_root.write("cgroup.subtree_control", "");
}

void FakeCgroupfs::add(const std::string& name, bool populated) {
    std::filesystem::create_directories(m_root.path() + "/" + name);
    for (const char* file : {"cgroup.procs", "cgroup.kill", "cgroup.subtree_control", "cpu.max",
                             "cpu.weight", "io.weight", "memory.high", "memory.max", "pids.max"}) {
        m_root.write(name + "/" + file, "");
    }
    m_root.write(name + "/cgroup.freeze", "");
    this->populated(name, populated);
}

void FakeCgroupfs::populated(const std::string& name, bool populated) {
    m_root.write(name + "/cgroup.events",
                 std::string("populated ") + (populated ? "1" : "0") + "\nfrozen 0\n");
}

std::string FakeCgroupfs::write(const std::string& file, const std::string& content) {
    return m_root.write(file, content);
}

std::string FakeCgroupfs::read(const std::string& file) const {
    return read_small_file(m_root.path() + "/" + file).value_or("<missing>");
}

std::unique_ptr<CgroupTree> FakeCgroupfs::open() {
    auto tree = CgroupTree::open(m_root.path(), 0);
    REQUIRE(tree);
    return std::move(*tree);
}

}  // namespace pkit::shell::test
