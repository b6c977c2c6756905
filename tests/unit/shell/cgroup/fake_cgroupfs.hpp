#pragma once
// The cgroup tests' one fake cgroupfs: a temp directory of plain files standing in for
// the kernel's. ROOT has `cgroup.controllers` and `cgroup.subtree_control`; each
// service's cgroup ROOT/NAME has the files pkitd reads and writes, as the kernel makes
// them when the directory is created. A test plays the kernel by writing them
// (populated(), write()); what needs the kernel itself (processes moving, cgroup.kill
// acting) is the integration tests' (test_cgroups.cpp).

#include <memory>
#include <string>

#include "daemon/shell/cgroup/cgroup_tree.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

class FakeCgroupfs {
public:
    // ROOT with `controllers` (space-separated) available.
    explicit FakeCgroupfs(const std::string& controllers = "cpu pids");

    const std::string& path() const { return m_root.path(); }
    // ROOT/`name` with the kernel's files: cgroup.procs and cgroup.kill empty,
    // cgroup.events saying `populated`, cgroup.freeze and each limit file empty (a plain
    // file reads back the last write whole).
    // Made before open(), it is what a killed pkitd left behind.
    void add(const std::string& name, bool populated);
    // cgroup.events of ROOT/`name`, as the kernel rewrites it.
    void populated(const std::string& name, bool populated);
    // Writes `content` to `file` under ROOT; returns the full path.
    std::string write(const std::string& file, const std::string& content);
    // The content of `file` under ROOT, "<missing>" when there is none.
    std::string read(const std::string& file) const;
    // CgroupTree::open at ROOT, moving no process (it must succeed).
    std::unique_ptr<CgroupTree> open();

private:
    TempDir m_root;
};

}  // namespace pkit::shell::test
