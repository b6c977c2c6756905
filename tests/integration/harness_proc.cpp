#include "tests/integration/harness_proc.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace pkit::itest {

namespace {

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

bool contains(const std::string& haystack, std::string_view needle) {
    return haystack.find(needle) != std::string::npos;
}

}  // namespace

std::optional<ProcInfo> proc_info(pid_t pid) {
    const std::string base = "/proc/" + std::to_string(pid);
    const std::string stat = slurp(base + "/stat");
    // "pid (comm) S ppid pgrp ...": comm may hold spaces and parentheses.
    const auto close = stat.rfind(')');
    if (close == std::string::npos) {
        return std::nullopt;
    }
    ProcInfo info;
    info.pid = pid;
    std::istringstream rest(stat.substr(close + 1));
    rest >> info.state >> info.ppid >> info.pgid;
    if (!rest) {
        return std::nullopt;
    }
    info.cmdline = slurp(base + "/cmdline");
    std::replace(info.cmdline.begin(), info.cmdline.end(), '\0', ' ');
    while (!info.cmdline.empty() && info.cmdline.back() == ' ') {
        info.cmdline.pop_back();
    }
    return info;
}

std::vector<ProcInfo> all_processes() {
    std::vector<ProcInfo> procs;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
        const std::string name = entry.path().filename().string();
        pid_t pid = 0;
        const auto [end, err] = std::from_chars(name.data(), name.data() + name.size(), pid);
        if (err != std::errc{} || end != name.data() + name.size()) {
            continue;
        }
        if (auto info = proc_info(pid)) {
            procs.push_back(std::move(*info));
        }
    }
    return procs;
}

bool pid_alive(pid_t pid) {
    const auto info = proc_info(pid);
    return info && info->state != 'Z' && info->state != 'X';
}

bool is_zombie(pid_t pid) {
    const auto info = proc_info(pid);
    return info && info->state == 'Z';
}

std::vector<ProcInfo> children_of(pid_t pid) {
    std::vector<ProcInfo> out;
    for (auto& p : all_processes()) {
        if (p.ppid == pid) {
            out.push_back(std::move(p));
        }
    }
    return out;
}

std::vector<ProcInfo> descendants_of(pid_t pid) {
    const auto procs = all_processes();
    std::vector<ProcInfo> out;
    std::vector<pid_t> frontier{pid};
    while (!frontier.empty()) {
        const pid_t parent = frontier.back();
        frontier.pop_back();
        for (const auto& p : procs) {
            if (p.ppid == parent && p.pid != pid) {
                out.push_back(p);
                frontier.push_back(p.pid);
            }
        }
    }
    return out;
}

std::vector<ProcInfo> zombies_among(const std::vector<ProcInfo>& procs) {
    std::vector<ProcInfo> out;
    std::copy_if(procs.begin(), procs.end(), std::back_inserter(out),
                 [](const ProcInfo& p) { return p.state == 'Z'; });
    return out;
}

std::vector<ProcInfo> group_members(pid_t pgid) {
    std::vector<ProcInfo> out;
    for (auto& p : all_processes()) {
        if (p.pgid == pgid) {
            out.push_back(std::move(p));
        }
    }
    return out;
}

std::optional<long> rss_kb(pid_t pid) {
    std::istringstream in(slurp("/proc/" + std::to_string(pid) + "/status"));
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("VmRSS:", 0) == 0) {
            return std::stol(line.substr(6));
        }
    }
    return std::nullopt;
}

std::vector<ProcInfo> marker_processes(std::string_view marker, const std::vector<pid_t>& exclude) {
    std::vector<ProcInfo> out;
    const pid_t self = ::getpid();
    for (auto& p : all_processes()) {
        if (p.pid == self || p.state == 'Z' ||
            std::find(exclude.begin(), exclude.end(), p.pid) != exclude.end()) {
            continue;
        }
        const std::string environ = slurp("/proc/" + std::to_string(p.pid) + "/environ");
        if (contains(p.cmdline, marker) || contains(environ, marker)) {
            out.push_back(std::move(p));
        }
    }
    return out;
}

int kill_marker_processes(std::string_view marker) {
    const auto procs = marker_processes(marker);
    for (const auto& p : procs) {
        ::kill(p.pid, SIGKILL);
    }
    return static_cast<int>(procs.size());
}

std::string describe(const std::vector<ProcInfo>& procs) {
    std::ostringstream out;
    for (const auto& p : procs) {
        out << "\n  pid " << p.pid << " (" << p.state << ", ppid " << p.ppid << ", pgid " << p.pgid
            << "): " << p.cmdline;
    }
    return procs.empty() ? std::string(" none") : out.str();
}

}  // namespace pkit::itest
