#include "daemon/shell/cgroup/cgroup_tree.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace pkit::shell {
namespace {

constexpr std::string_view k_self_cgroup = "_pkitd";

bool exists(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
}

bool has_xattr(const std::string& path, const char* name) {
    char value[8];
    return ::getxattr(path.c_str(), name, value, sizeof value) >= 0;
}

// The pids of a cgroup.procs text.
std::vector<pid_t> parse_pids(std::string_view text) {
    std::vector<pid_t> pids;
    while (!text.empty()) {
        std::size_t end = text.find('\n');
        std::string_view line = text.substr(0, end);
        text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
        pid_t pid = 0;
        bool ok = !line.empty();
        for (char c : line) {
            ok = ok && c >= '0' && c <= '9';
            pid = pid * 10 + (c - '0');
        }
        if (ok && pid > 1) {
            pids.push_back(pid);
        }
    }
    return pids;
}

}  // namespace

std::vector<std::string> cgroup_words(std::string_view text) {
    std::vector<std::string> out;
    std::size_t i = 0;
    while (i < text.size()) {
        std::size_t start = text.find_first_not_of(" \n", i);
        if (start == std::string_view::npos) {
            break;
        }
        std::size_t end = text.find_first_of(" \n", start);
        end = end == std::string_view::npos ? text.size() : end;
        out.emplace_back(text.substr(start, end - start));
        i = end;
    }
    return out;
}

std::optional<std::string> read_small_file(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return std::nullopt;
    }
    std::string text;
    char buffer[4096];
    for (;;) {
        ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0 || text.size() > (1 << 20)) {
            bool failed = n < 0;
            ::close(fd);
            return failed ? std::nullopt : std::optional<std::string>(std::move(text));
        }
        text.append(buffer, static_cast<std::size_t>(n));
    }
}

std::expected<void, int> write_file(const std::string& path, std::string_view text) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        return std::unexpected(errno);
    }
    ssize_t n = ::write(fd, text.data(), text.size());
    int error = errno;
    ::close(fd);
    if (n != static_cast<ssize_t>(text.size())) {
        return std::unexpected(n < 0 ? error : EIO);
    }
    return {};
}

CgroupFacts gather_cgroup_facts(const std::string& proc_self) {
    CgroupFacts facts;
    facts.pid1 = ::getpid() == 1;
    auto proc_cgroup = read_small_file(proc_self + "/cgroup");
    auto mountinfo = read_small_file(proc_self + "/mountinfo");
    if (!proc_cgroup || !mountinfo) {
        facts.missing = "cannot read " + proc_self + "/cgroup or " + proc_self + "/mountinfo";
        return facts;
    }
    auto path = parse_unified_path(*proc_cgroup);
    if (!path) {
        facts.missing = "no cgroup v2 hierarchy in " + proc_self + "/cgroup";
        return facts;
    }
    // In its own _pkitd already (an upgrade in place exec'd this pkitd there): the
    // cgroup it manages is the one above.
    if (path->ends_with("/" + std::string(k_self_cgroup))) {
        path->resize(path->size() - k_self_cgroup.size() - 1);
        if (path->empty()) {
            *path = "/";
        }
    }
    auto located = locate_cgroup(parse_cgroup2_mounts(*mountinfo), *path);
    if (!located) {
        facts.missing = "its cgroup " + *path + " is under no cgroup2 mount";
        return facts;
    }
    const std::string& dir = located->dir;
    facts.dir = dir;
    facts.hierarchy_root = !exists(dir + "/cgroup.type");
    facts.delegated = has_xattr(dir, "trusted.delegate") || has_xattr(dir, "user.delegate");
    if (located->read_only) {
        facts.not_writable = "mounted read-only";
    } else if (::access(dir.c_str(), W_OK) != 0 ||
               ::access((dir + "/cgroup.procs").c_str(), W_OK) != 0) {
        facts.not_writable = std::strerror(errno);
    } else {
        facts.writable = true;
    }
    std::string own = dir + "/" + std::string(k_self_cgroup);
    if (exists(own)) {
        for (pid_t pid : parse_pids(read_small_file(own + "/cgroup.procs").value_or(""))) {
            facts.other_pkitd = facts.other_pkitd || pid != ::getpid();
        }
    }
    return facts;
}

std::expected<std::unique_ptr<CgroupTree>, std::string> CgroupTree::open(std::string root,
                                                                         pid_t self, bool adopt) {
    std::unique_ptr<CgroupTree> tree(new CgroupTree(std::move(root)));
    std::string own = tree->dir(k_self_cgroup);
    if (::mkdir(own.c_str(), 0755) != 0 && errno != EEXIST) {
        return std::unexpected("cannot create " + own + ": " + std::strerror(errno));
    }
    if (self > 0) {
        if (auto moved = write_file(own + "/cgroup.procs", std::to_string(self)); !moved) {
            ::rmdir(own.c_str());
            return std::unexpected("cannot move pkitd into " + own + ": " +
                                   std::strerror(moved.error()));
        }
        tree->m_self = self;
    }
    // Each controller on its own: one the parent does not grant fails alone.
    auto available = read_small_file(tree->m_root + "/cgroup.controllers");
    for (const std::string& controller : cgroup_words(available.value_or(""))) {
        if (write_file(tree->m_root + "/cgroup.subtree_control", "+" + controller)) {
            tree->m_controllers.push_back(controller);
        }
    }
    // What a killed pkitd's services left: ended now, their cgroups reused.
    if (DIR* listing = ::opendir(tree->m_root.c_str())) {
        while (dirent* entry = ::readdir(listing)) {
            std::string name = entry->d_name;
            if (entry->d_type != DT_DIR || name == "." || name == ".." || name == k_self_cgroup) {
                continue;
            }
            tree->m_made.push_back(name);
            if (adopt) {
                continue;
            }
            if (tree->populated(name).value_or(false)) {
                tree->kill(name);
                tree->m_leftovers.push_back(name);
            }
            (void)tree->freeze(name, false);
        }
        ::closedir(listing);
    }
    std::ranges::sort(tree->m_leftovers);
    return tree;
}

std::expected<std::string, std::string> CgroupTree::make(std::string_view name) {
    std::string path = dir(name);
    if (name.empty() || name == k_self_cgroup || name.find('/') != std::string_view::npos) {
        return std::unexpected("cannot create cgroup " + path + ": not a usable name");
    }
    if (::mkdir(path.c_str(), 0755) == 0) {
        m_made.emplace_back(name);
    } else if (errno != EEXIST) {
        return std::unexpected("cannot create cgroup " + path + ": " + std::strerror(errno));
    } else if (std::ranges::find(m_made, name) == m_made.end()) {
        m_made.emplace_back(name);
    }
    return path;
}

std::optional<bool> CgroupTree::populated(std::string_view name) const {
    auto events = read_small_file(dir(name) + "/cgroup.events");
    return events ? parse_populated(*events) : std::nullopt;
}

bool CgroupTree::was_killed(std::string_view name) const {
    return std::ranges::find(m_killed, name) != m_killed.end();
}

void CgroupTree::kill(std::string_view name) {
    if (!was_killed(name)) {
        m_killed.emplace_back(name);
    }
    if (write_file(dir(name) + "/cgroup.kill", "1")) {
        return;
    }
    // Before 5.14: kill what is listed until nothing is (a fork between the read and the
    // kill shows up in the next pass), a bounded number of passes.
    for (int pass = 0; pass < 16 && signal(name, SIGKILL) > 0; ++pass) {
    }
}

std::size_t CgroupTree::signal(std::string_view name, int signo) const {
    auto procs = read_small_file(dir(name) + "/cgroup.procs");
    std::size_t reached = 0;
    for (pid_t pid : parse_pids(procs.value_or(""))) {
        if (pid != m_self && ::kill(pid, signo) == 0) {
            ++reached;
        }
    }
    return reached;
}

std::optional<std::uint64_t> cgroup_cpu_usage_usec(const std::string& dir) {
    auto stat = read_small_file(dir + "/cpu.stat");
    return stat ? parse_keyed(*stat, "usage_usec") : std::nullopt;
}

std::optional<std::uint64_t> cgroup_memory_current(const std::string& dir) {
    auto text = read_small_file(dir + "/memory.current");
    std::uint64_t value = 0;
    if (!text || text->empty()) {
        return std::nullopt;
    }
    for (char c : *text) {
        if (c == '\n') {
            break;
        }
        if (c < '0' || c > '9') {
            return std::nullopt;
        }
        value = value * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return value;
}

std::optional<std::uint64_t> cgroup_oom_kills(const std::string& dir) {
    auto events = read_small_file(dir + "/memory.events");
    return events ? parse_keyed(*events, "oom_kill") : std::nullopt;
}

std::vector<pid_t> cgroup_procs(const std::string& dir) {
    return parse_pids(read_small_file(dir + "/cgroup.procs").value_or(""));
}

std::optional<std::uint64_t> CgroupTree::cpu_usage_usec(std::string_view name) const {
    return cgroup_cpu_usage_usec(dir(name));
}

std::optional<std::uint64_t> CgroupTree::oom_kills(std::string_view name) const {
    return cgroup_oom_kills(dir(name));
}

std::expected<void, int> CgroupTree::freeze(std::string_view name, bool frozen) const {
    return write_file(dir(name) + "/cgroup.freeze", frozen ? "1" : "0");
}

std::optional<bool> CgroupTree::frozen(std::string_view name) const {
    auto events = read_small_file(dir(name) + "/cgroup.events");
    if (!events) {
        return std::nullopt;
    }
    auto value = parse_keyed(*events, "frozen");
    return value ? std::optional<bool>(*value != 0) : std::nullopt;
}

void CgroupTree::remove_all() {
    if (std::exchange(m_removed, true)) {
        return;
    }
    for (const std::string& name : m_made) {
        ::rmdir(dir(name).c_str());
    }
    for (auto it = m_controllers.rbegin(); it != m_controllers.rend(); ++it) {
        (void)write_file(m_root + "/cgroup.subtree_control", "-" + *it);
    }
    if (m_self > 0) {
        (void)write_file(m_root + "/cgroup.procs", std::to_string(m_self));
    }
    ::rmdir(dir(k_self_cgroup).c_str());
}

}  // namespace pkit::shell
