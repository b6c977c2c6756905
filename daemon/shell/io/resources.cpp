#include "daemon/shell/io/resources.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>

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
    long long pgid = 0;
    bool ok = to_number(fields[2], pgid) && to_number(fields[11], out.utime) &&
              to_number(fields[12], out.stime) && to_number(fields[13], out.cutime) &&
              to_number(fields[14], out.cstime) && to_number(fields[21], out.rss_pages);
    out.pgid = static_cast<pid_t>(pgid);
    return ok;
}

std::vector<proto::Resources> read_group_resources(const std::vector<pid_t>& pgids) {
    std::vector<proto::Resources> result(pgids.size());
    if (pgids.empty()) {
        return result;
    }
    // Sorted (pgid, position) pairs: one binary search a process.
    std::vector<std::pair<pid_t, std::size_t>> wanted;
    wanted.reserve(pgids.size());
    for (std::size_t k = 0; k < pgids.size(); ++k) {
        if (pgids[k] > 0) {
            wanted.emplace_back(pgids[k], k);
        }
    }
    if (wanted.empty()) {
        return result;
    }
    std::ranges::sort(wanted);
    static const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
    static const long long page = ::sysconf(_SC_PAGESIZE);

    DIR* proc = ::opendir("/proc");
    if (proc == nullptr) {
        return result;
    }
    int proc_fd = ::dirfd(proc);
    char path[sizeof(dirent::d_name) + 8];
    char buffer[1024];
    while (const dirent* entry = ::readdir(proc)) {
        if (entry->d_name[0] < '1' || entry->d_name[0] > '9') {
            continue;
        }
        std::snprintf(path, sizeof path, "%s/stat", entry->d_name);
        int fd = ::openat(proc_fd, path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            continue;  // gone since readdir
        }
        ssize_t n = ::read(fd, buffer, sizeof buffer);
        ::close(fd);
        ProcStat stat;
        if (n <= 0 ||
            !parse_proc_stat(std::string_view(buffer, static_cast<std::size_t>(n)), stat)) {
            continue;
        }
        auto it = std::ranges::lower_bound(wanted, std::pair{stat.pgid, std::size_t{0}});
        for (; it != wanted.end() && it->first == stat.pgid; ++it) {
            proto::Resources& sum = result[it->second];
            if (stat.state != 'Z' && stat.state != 'X') {
                ++sum.processes;
            }
            sum.cpu_seconds += static_cast<double>(stat.utime + stat.stime) / ticks +
                               static_cast<double>(stat.cutime + stat.cstime) / ticks;
            sum.rss_bytes += stat.rss_pages * page;
        }
    }
    ::closedir(proc);
    return result;
}

}  // namespace pkit::shell
