#include "daemon/shell/cgroup/cgroup_find.hpp"

#include <charconv>
#include <cstdint>

namespace pkit::shell {
namespace {

// The next line of `text` (without its newline); `text` moves past it.
std::string_view next_line(std::string_view& text) {
    std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    return line;
}

// The space-separated fields of one line.
std::vector<std::string_view> fields_of(std::string_view line) {
    std::vector<std::string_view> fields;
    while (!line.empty()) {
        std::size_t start = line.find_first_not_of(' ');
        if (start == std::string_view::npos) {
            break;
        }
        line.remove_prefix(start);
        std::size_t end = line.find(' ');
        fields.push_back(line.substr(0, end));
        line.remove_prefix(end == std::string_view::npos ? line.size() : end);
    }
    return fields;
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape(std::string_view field) {
    std::string out;
    for (std::size_t i = 0; i < field.size(); ++i) {
        if (field[i] == '\\' && i + 3 < field.size() && field[i + 1] >= '0' &&
            field[i + 1] <= '3' && field[i + 2] >= '0' && field[i + 2] <= '7' &&
            field[i + 3] >= '0' && field[i + 3] <= '7') {
            out += static_cast<char>((field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 +
                                     (field[i + 3] - '0'));
            i += 3;
        } else {
            out += field[i];
        }
    }
    return out;
}

bool has_option(std::string_view options, std::string_view wanted) {
    while (!options.empty()) {
        std::size_t comma = options.find(',');
        if (options.substr(0, comma) == wanted) {
            return true;
        }
        options.remove_prefix(comma == std::string_view::npos ? options.size() : comma + 1);
    }
    return false;
}

// Whether `path` is `root` or below it; the rest (with its leading '/') or "".
std::optional<std::string_view> below(std::string_view path, std::string_view root) {
    if (root == "/") {
        return path == "/" ? std::string_view{} : path;
    }
    if (!path.starts_with(root)) {
        return std::nullopt;
    }
    std::string_view rest = path.substr(root.size());
    if (!rest.empty() && rest.front() != '/') {
        return std::nullopt;
    }
    return rest;
}

}  // namespace

std::vector<Cgroup2Mount> parse_cgroup2_mounts(std::string_view mountinfo) {
    std::vector<Cgroup2Mount> mounts;
    while (!mountinfo.empty()) {
        std::vector<std::string_view> f = fields_of(next_line(mountinfo));
        // ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
        std::size_t dash = 6;
        while (dash < f.size() && f[dash] != "-") {
            ++dash;
        }
        if (f.size() < 7 || dash + 1 >= f.size() || f[dash + 1] != "cgroup2") {
            continue;
        }
        mounts.push_back(Cgroup2Mount{unescape(f[3]), unescape(f[4]), has_option(f[5], "ro")});
    }
    return mounts;
}

std::optional<std::string> parse_unified_path(std::string_view proc_cgroup) {
    while (!proc_cgroup.empty()) {
        std::string_view line = next_line(proc_cgroup);
        if (!line.starts_with("0::")) {
            continue;
        }
        line.remove_prefix(3);
        if (line.empty() || line.front() != '/' || line.ends_with(" (deleted)")) {
            return std::nullopt;
        }
        return std::string(line);
    }
    return std::nullopt;
}

std::optional<CgroupDir> locate_cgroup(const std::vector<Cgroup2Mount>& mounts,
                                       std::string_view path) {
    std::optional<CgroupDir> read_only;
    for (const Cgroup2Mount& mount : mounts) {
        auto rest = below(path, mount.root);
        if (!rest) {
            continue;
        }
        std::string dir = mount.mount_point == "/" && !rest->empty()
                              ? std::string(*rest)
                              : mount.mount_point + std::string(*rest);
        if (!mount.read_only) {
            return CgroupDir{std::move(dir), false};
        }
        if (!read_only) {
            read_only = CgroupDir{std::move(dir), true};
        }
    }
    return read_only;
}

CgroupChoice choose_cgroup(config::CgroupMode mode, const CgroupFacts& facts) {
    auto no = [](std::string reason) { return CgroupChoice{false, "", std::move(reason)}; };
    if (mode == config::CgroupMode::off) {
        return no("cgroups = \"off\"");
    }
    if (!facts.dir) {
        return no(facts.missing);
    }
    const std::string& dir = *facts.dir;
    if (mode == config::CgroupMode::automatic) {
        if (!facts.pid1 && !facts.delegated) {
            return no("not PID 1 of its namespace, and its cgroup " + dir +
                      " is not delegated to it (no trusted.delegate or user.delegate)");
        }
        if (facts.pid1 && !facts.delegated && facts.hierarchy_root) {
            return no("PID 1, but its cgroup " + dir +
                      " is the hierarchy's root (no cgroup namespace of its own)");
        }
    }
    if (!facts.writable) {
        return no("its cgroup " + dir + " is not writable: " + facts.not_writable);
    }
    if (facts.other_pkitd) {
        return no("its cgroup " + dir + " has another pkitd (" + dir + "/_pkitd is populated)");
    }
    return CgroupChoice{true, dir, ""};
}

std::optional<std::uint64_t> parse_keyed(std::string_view text, std::string_view key) {
    while (!text.empty()) {
        std::vector<std::string_view> f = fields_of(next_line(text));
        if (f.size() == 2 && f[0] == key) {
            std::uint64_t value = 0;
            auto [end, error] = std::from_chars(f[1].data(), f[1].data() + f[1].size(), value);
            if (error == std::errc{} && end == f[1].data() + f[1].size()) {
                return value;
            }
            return std::nullopt;
        }
    }
    return std::nullopt;
}

std::optional<bool> parse_populated(std::string_view events) {
    auto value = parse_keyed(events, "populated");
    if (!value) {
        return std::nullopt;
    }
    return *value != 0;
}

}  // namespace pkit::shell
