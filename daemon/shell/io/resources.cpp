#include "daemon/shell/io/resources.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace pkit::shell {

namespace {

// The next space-separated field of `rest`, consumed.
std::string_view next_field(std::string_view& rest) {
    std::size_t start = rest.find_first_not_of(' ');
    if (start == std::string_view::npos) {
        rest = {};
        return {};
    }
    rest.remove_prefix(start);
    std::size_t end = rest.find(' ');
    std::string_view field = rest.substr(0, end);
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
    return field;
}

template <typename T>
bool to_number(std::string_view text, T& out) {
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc{} && end == text.data() + text.size();
}

// A stat file (`path` under `dir_fd`) into `buffer`, opened and closed here: the bytes
// read, 0 when its process is gone (since readdir, for a pass).
std::size_t read_stat(int dir_fd, const char* path, char* buffer, std::size_t size) {
    int fd = ::openat(dir_fd, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return 0;
    }
    ssize_t n = ::read(fd, buffer, size);
    ::close(fd);
    return n > 0 ? static_cast<std::size_t>(n) : 0;
}

// pkitd's open descriptors. Since Linux 6.2 the size of /proc/self/fd is their number,
// read in microseconds; listing the directory costs a dentry for each (25 ms at 20,000
// descriptors, 10,000 services), and is left to older kernels (size 0).
std::int64_t count_own_fds() {
    struct stat info {};
    if (::stat("/proc/self/fd", &info) == 0 && info.st_size > 0) {
        return static_cast<std::int64_t>(info.st_size);
    }
    return count_own_fds_listed();
}

// Adds a process's figures, as /proc/PID/stat gives them, to `sum`.
void add_process(proto::Resources& sum, const ProcStat& stat) {
    static const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
    static const long long page = ::sysconf(_SC_PAGESIZE);
    if (stat.state != 'Z' && stat.state != 'X') {
        ++sum.processes;
    }
    sum.cpu_seconds += static_cast<double>(stat.utime + stat.stime) / ticks +
                       static_cast<double>(stat.cutime + stat.cstime) / ticks;
    sum.rss_bytes += stat.rss_pages * page;
}

void add_resources(proto::Resources& sum, const proto::Resources& more) {
    sum.processes += more.processes;
    sum.cpu_seconds += more.cpu_seconds;
    sum.rss_bytes += more.rss_bytes;
}

}  // namespace

bool parse_proc_stat(std::string_view line, ProcStat& out) {
    // "pid (comm) S ppid pgrp ..."; comm may hold spaces and parentheses, so the
    // fields start after the last ')'.
    std::size_t close = line.rfind(')');
    if (close == std::string_view::npos) {
        return false;
    }
    std::string_view rest = line.substr(close + 1);
    std::string_view fields[22];  // fields 3 .. 24 of proc(5)
    for (auto& field : fields) {
        field = next_field(rest);
        if (field.empty()) {
            return false;
        }
    }
    out.state = fields[0].front();
    long long ppid = 0;
    long long pgid = 0;
    bool ok = to_number(fields[1], ppid) && to_number(fields[2], pgid) &&
              to_number(fields[11], out.utime) && to_number(fields[12], out.stime) &&
              to_number(fields[13], out.cutime) && to_number(fields[14], out.cstime) &&
              to_number(fields[21], out.rss_pages);
    out.ppid = static_cast<pid_t>(ppid);
    out.pgid = static_cast<pid_t>(pgid);
    return ok;
}

GroupScan scan_group_resources(const std::vector<pid_t>& pgids, ProcShare share, bool with_others) {
    GroupScan scan;
    scan.sums.resize(pgids.size());
    // Sorted (pgid, position) pairs: one binary search a process.
    std::vector<std::pair<pid_t, std::size_t>> wanted;
    wanted.reserve(pgids.size());
    for (std::size_t k = 0; k < pgids.size(); ++k) {
        if (pgids[k] > 0) {
            wanted.emplace_back(pgids[k], k);
        }
    }
    if (wanted.empty() || share.count == 0 || share.index >= share.count) {
        return scan;
    }
    std::ranges::sort(wanted);

    DIR* proc = ::opendir("/proc");
    if (proc == nullptr) {
        return scan;
    }
    int proc_fd = ::dirfd(proc);
    char buffer[1024];
    while (const dirent* entry = ::readdir(proc)) {
        if (entry->d_name[0] < '1' || entry->d_name[0] > '9') {
            continue;
        }
        int pid = 0;
        std::string_view name(entry->d_name);
        if (!to_number(name, pid) || static_cast<unsigned>(pid) % share.count != share.index) {
            continue;
        }
        char path[32];
        std::snprintf(path, sizeof path, "%d/stat", pid);
        std::size_t n = read_stat(proc_fd, path, buffer, sizeof buffer);
        ProcStat stat;
        if (n == 0 || !parse_proc_stat(std::string_view(buffer, n), stat)) {
            continue;
        }
        if (with_others) {
            scan.parents.emplace_back(stat.ppid, static_cast<pid_t>(pid));
        }
        auto it = std::ranges::lower_bound(wanted, std::pair{stat.pgid, std::size_t{0}});
        bool in_group = it != wanted.end() && it->first == stat.pgid;
        if (in_group) {
            for (; it != wanted.end() && it->first == stat.pgid; ++it) {
                add_process(scan.sums[it->second], stat);
            }
        } else if (with_others) {
            proto::Resources figures;
            add_process(figures, stat);
            scan.others.emplace_back(pid, figures);
        }
    }
    ::closedir(proc);
    std::ranges::sort(scan.others, {}, &std::pair<pid_t, proto::Resources>::first);
    std::ranges::sort(scan.parents);
    return scan;
}

std::vector<std::pair<pid_t, std::size_t>> descendants(const std::vector<GroupScan>& scans,
                                                       const std::vector<pid_t>& roots) {
    std::vector<std::pair<pid_t, pid_t>> parents;  // (parent, child), every share's
    for (const GroupScan& scan : scans) {
        parents.insert(parents.end(), scan.parents.begin(), scan.parents.end());
    }
    std::ranges::sort(parents);
    std::vector<std::pair<pid_t, std::size_t>> out;
    std::vector<pid_t> frontier;
    for (std::size_t k = 0; k < roots.size(); ++k) {
        if (roots[k] <= 0) {
            continue;
        }
        frontier.assign(1, roots[k]);
        // A tree: each pid has one parent, so each is reached once; the bound only
        // guards against a pid read twice under two parents (reused between reads).
        for (std::size_t seen = 0; !frontier.empty() && seen <= parents.size(); ++seen) {
            const pid_t parent = frontier.back();
            frontier.pop_back();
            auto [first, last] =
                std::ranges::equal_range(parents, parent, {}, &std::pair<pid_t, pid_t>::first);
            for (auto it = first; it != last; ++it) {
                out.emplace_back(it->second, k);
                frontier.push_back(it->second);
            }
        }
    }
    return out;
}

std::vector<proto::Resources> add_group_scans(std::vector<GroupScan> scans,
                                              std::vector<std::pair<pid_t, std::size_t>> members) {
    if (scans.empty()) {
        return {};
    }
    std::vector<proto::Resources> result = std::move(scans.front().sums);
    std::ranges::sort(members);
    for (std::size_t s = 0; s < scans.size(); ++s) {
        const GroupScan& scan = scans[s];
        for (std::size_t k = 0; s > 0 && k < result.size() && k < scan.sums.size(); ++k) {
            add_resources(result[k], scan.sums[k]);
        }
        // A member (pid, position) outside its group: its figures, found by pid.
        auto other = scan.others.begin();
        for (const auto& [pid, position] : members) {
            while (other != scan.others.end() && other->first < pid) {
                ++other;
            }
            if (other != scan.others.end() && other->first == pid && position < result.size()) {
                add_resources(result[position], other->second);
            }
        }
    }
    return result;
}

std::int64_t count_own_fds_listed() {
    DIR* fds = ::opendir("/proc/self/fd");
    if (fds == nullptr) {
        return 0;
    }
    std::int64_t count = 0;
    while (const dirent* entry = ::readdir(fds)) {
        if (entry->d_name[0] != '.') {
            ++count;
        }
    }
    ::closedir(fds);
    return count - 1;  // the directory's own descriptor
}

std::optional<OwnProcess> read_own_process() {
    static const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
    static const long long page = ::sysconf(_SC_PAGESIZE);
    char buffer[1024];
    std::size_t n = read_stat(AT_FDCWD, "/proc/self/stat", buffer, sizeof buffer);
    ProcStat stat;
    if (n == 0 || !parse_proc_stat(std::string_view(buffer, n), stat)) {
        return std::nullopt;
    }
    OwnProcess own;
    own.cpu_seconds = static_cast<double>(stat.utime + stat.stime) / ticks;
    own.rss_bytes = stat.rss_pages * page;
    own.open_fds = count_own_fds();
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
        own.max_fds = static_cast<std::int64_t>(limit.rlim_cur);
    }
    return own;
}

}  // namespace pkit::shell
