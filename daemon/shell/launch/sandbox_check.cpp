#include "daemon/shell/launch/sandbox_check.hpp"

#include <linux/capability.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <set>
#include <string>
#include <system_error>

namespace pkit::shell {

namespace {

// Runs `probe` in a forked child; whether it exited 0.
template <class Probe>
bool child_can(Probe probe) {
    pid_t pid = fork();
    if (pid < 0) {
        return false;
    }
    if (pid == 0) {
        _exit(probe() ? 0 : 1);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

const config::SecuritySpec::KeyAt* key_at(const config::SecuritySpec& s, std::string_view key) {
    auto it = std::ranges::find(s.at, key, &config::SecuritySpec::KeyAt::key);
    return it == s.at.end() ? nullptr : &*it;
}

}  // namespace

SandboxAbilities sandbox_abilities_here() {
    SandboxAbilities out;
    out.root = geteuid() == 0;
    out.can_drop_bounding = prctl(PR_CAPBSET_READ, CAP_SETPCAP, 0, 0, 0) == 1 && out.root;
    out.mount_namespace = child_can([] {
        if (unshare(CLONE_NEWNS) != 0 ||
            mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0) {
            return false;
        }
        int fd = open_tree(AT_FDCWD, "/", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
        mount_attr attr{};
        attr.attr_set = MOUNT_ATTR_RDONLY;
        return fd >= 0 && mount_setattr(fd, "", AT_EMPTY_PATH, &attr, sizeof attr) == 0;
    });
    out.network_namespace = child_can([] { return unshare(CLONE_NEWNET) == 0; });
    return out;
}

std::vector<config::Diagnostic> sandbox_warnings(const config::Tree& tree,
                                                 const SandboxAbilities& abilities) {
    std::vector<config::Diagnostic> out;
    std::set<std::string> files;
    for (const config::ServiceSpec& spec : tree.services) {
        const config::SecuritySpec& s = *spec.security;
        if (!s.any() || !files.insert(spec.file).second) {
            continue;
        }
        auto warn = [&](std::string_view key, const std::string& why) {
            const auto* at = key_at(s, key);
            config::Diagnostic d;
            d.file = spec.file;
            d.line = at != nullptr ? at->line : 1;
            d.column = at != nullptr ? at->column : 1;
            d.message = "security." + std::string(key) + ": not applied here: " + why +
                        "; every launch fails with launch error sandbox";
            d.warning = true;
            out.push_back(std::move(d));
        };
        for (const auto& entry : s.at) {
            const std::string& key = entry.key;
            if (key == "no_new_privileges") {
                continue;  // any process may set it
            }
            if (key == "capabilities") {
                if (!abilities.can_drop_bounding) {
                    warn(key, abilities.root ? "pkitd lacks CAP_SETPCAP"
                                             : "pkitd is not root (it needs CAP_SETPCAP)");
                }
                continue;
            }
            if (key == "private_network") {
                if (s.private_network && !abilities.network_namespace) {
                    warn(key, abilities.root ? "network namespaces are not available"
                                             : "pkitd is not root");
                }
                continue;
            }
            // Only what asks for a mount namespace: `private_tmp = false` or an empty
            // list does not.
            const std::vector<std::string>* paths = key == "writable_paths"    ? &s.writable_paths
                                                    : key == "read_only_paths" ? &s.read_only_paths
                                                    : key == "inaccessible_paths"
                                                        ? &s.inaccessible_paths
                                                        : nullptr;
            const bool set = (key == "private_tmp" && s.private_tmp) || (key == "protect_system") ||
                             (paths != nullptr && !paths->empty());
            if (set && !abilities.mount_namespace) {
                warn(key,
                     abilities.root ? "mount namespaces are not available" : "pkitd is not root");
                continue;
            }
            for (const std::string& path : paths != nullptr ? *paths : std::vector<std::string>{}) {
                std::error_code error;
                if (!std::filesystem::exists(path, error)) {
                    warn(key, path + " does not exist");
                }
            }
        }
    }
    return out;
}

}  // namespace pkit::shell
