#pragma once
// A cgroup of the test's own for one pkitd: a fresh child of the cgroup the tests run
// in, on this machine's cgroup v2 hierarchy, marked delegated (trusted.delegate) so that
// pkitd's `cgroups = "auto"` takes it. Removed with everything below it at destruction,
// after killing what is left in it.

#include <memory>
#include <string>

namespace pkit::itest {

class TestCgroup {
public:
    // A new delegated cgroup, or nullptr with `why` set when this machine has no
    // writable cgroup v2 hierarchy for the tests (not root, no cgroup2 mount, ...).
    static std::unique_ptr<TestCgroup> make(std::string& why);
    ~TestCgroup();
    TestCgroup(const TestCgroup&) = delete;
    TestCgroup& operator=(const TestCgroup&) = delete;

    const std::string& path() const { return m_path; }
    // Where the cgroup2 hierarchy holding it is mounted.
    const std::string& mount_point() const { return m_mount_point; }
    // PATH/NAME's file FILE, read whole ("" when missing).
    std::string read(const std::string& name, const std::string& file) const;
    // Whether PATH/NAME holds a process (its cgroup.events).
    bool populated(const std::string& name) const;

private:
    TestCgroup(std::string path, std::string mount_point)
        : m_path(std::move(path)), m_mount_point(std::move(mount_point)) {}
    std::string m_path;
    std::string m_mount_point;
};

}  // namespace pkit::itest
