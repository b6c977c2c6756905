#include "tests/integration/harness_cgroup.hpp"

#include <signal.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <thread>
#include <vector>

#include "tests/integration/harness_files.hpp"

namespace pkit::itest {
namespace {

// The directory of this process's cgroup v2 cgroup, from mountinfo and /proc/self/cgroup
// (the first cgroup2 mount whose root is "/": enough for the test machines).
std::string own_cgroup_dir(std::string& why, std::string& mount_point) {
    std::string path;
    std::istringstream cgroups(read_file("/proc/self/cgroup"));
    for (std::string line; std::getline(cgroups, line);) {
        if (line.starts_with("0::")) {
            path = line.substr(3);
        }
    }
    if (path.empty()) {
        why = "no cgroup v2 hierarchy in /proc/self/cgroup";
        return "";
    }
    std::istringstream mounts(read_file("/proc/self/mountinfo"));
    for (std::string line; std::getline(mounts, line);) {
        std::istringstream fields(line);
        std::vector<std::string> f;
        for (std::string field; fields >> field;) {
            f.push_back(field);
        }
        auto dash = std::find(f.begin(), f.end(), "-");
        if (f.size() > 6 && dash != f.end() && dash + 1 != f.end() && *(dash + 1) == "cgroup2" &&
            f[3] == "/" && f[5].starts_with("rw")) {
            mount_point = f[4];
            return f[4] + (path == "/" ? "" : path);
        }
    }
    why = "no read-write cgroup2 mount";
    return "";
}

}  // namespace

std::unique_ptr<TestCgroup> TestCgroup::make(std::string& why) {
    if (::geteuid() != 0) {
        why = "not root: cannot create cgroups";
        return nullptr;
    }
    std::string mount_point;
    std::string parent = own_cgroup_dir(why, mount_point);
    if (parent.empty()) {
        return nullptr;
    }
    static std::atomic<int> counter{0};
    std::string path =
        parent + "/pkit-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    std::error_code error;
    if (!std::filesystem::create_directory(path, error)) {
        why = "cannot create " + path + ": " + error.message();
        return nullptr;
    }
    if (::setxattr(path.c_str(), "trusted.delegate", "1", 1, 0) != 0) {
        why = "cannot mark " + path + " delegated: " + std::strerror(errno);
        ::rmdir(path.c_str());
        return nullptr;
    }
    return std::unique_ptr<TestCgroup>(new TestCgroup(path, mount_point));
}

std::string TestCgroup::read(const std::string& name, const std::string& file) const {
    return read_file(m_path + (name.empty() ? "" : "/" + name) + "/" + file);
}

bool TestCgroup::populated(const std::string& name) const {
    return read(name, "cgroup.events").find("populated 1") != std::string::npos;
}

TestCgroup::~TestCgroup() {
    // Deepest first: a cgroup is removed only once it has no children and no process.
    std::vector<std::string> dirs;
    std::error_code error;
    for (auto it = std::filesystem::recursive_directory_iterator(m_path, error);
         !error && it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
        if (it->is_directory()) {
            dirs.push_back(it->path().string());
        }
    }
    dirs.push_back(m_path);
    for (auto dir = dirs.rbegin(); dir != dirs.rend(); ++dir) {
        try {
            write_file(*dir + "/cgroup.kill", "1");
        } catch (...) {
        }
        for (int i = 0;
             i < 200 && read_file(*dir + "/cgroup.events").find("populated 1") != std::string::npos;
             ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        ::rmdir(dir->c_str());
    }
}

}  // namespace pkit::itest
