#include "daemon/shell/launch/sandbox_plan.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <climits>

#include "config/capabilities.hpp"

namespace pkit::shell {

namespace {

// strict leaves these as they were (SPEC §19): the API file systems and /run.
constexpr std::array<const char*, 4> k_strict_kept{"/dev", "/proc", "/sys", "/run"};
// full makes these read-only; /efi too, as systemd's ProtectSystem=full does.
constexpr std::array<const char*, 4> k_full_readonly{"/usr", "/boot", "/efi", "/etc"};

struct Entry {
    std::string path;
    bool writable = false;  // a captured path mounted back; else read-only
    bool optional = false;
    std::string label;
    int slot = -1;
};

}  // namespace

ChildSandbox plan_sandbox(const config::SecuritySpec& security, uid_t run_uid, bool has_cwd,
                          SandboxStore& store, std::vector<std::string>& labels) {
    ChildSandbox out;
    auto label = [&labels](std::string words) {
        labels.push_back(std::move(words));
        return static_cast<int>(labels.size() - 1);
    };
    if (security.private_network) {
        out.private_network = true;
        out.network_label = label("private_network");
    }
    if (security.mounts()) {
        out.mount_namespace = true;
        out.namespace_label = label("mount namespace");
        const bool strict = security.protect_system == config::ProtectSystem::strict;
        std::vector<Entry> entries;
        if (strict) {
            for (const char* path : k_strict_kept) {
                entries.push_back(
                    {path, true, true, "protect_system \"strict\": " + std::string(path)});
            }
        } else if (security.protect_system == config::ProtectSystem::full) {
            for (const char* path : k_full_readonly) {
                entries.push_back(
                    {path, false, true, "protect_system \"full\": " + std::string(path)});
            }
        }
        for (const std::string& path : security.writable_paths) {
            entries.push_back({path, true, false, "writable_paths " + path});
        }
        for (const std::string& path : security.read_only_paths) {
            entries.push_back({path, false, false, "read_only_paths " + path});
        }
        // Parents before children, so the deeper path's rule wins; on the same path
        // read-only goes last and wins.
        std::ranges::stable_sort(entries, [](const Entry& a, const Entry& b) {
            return a.path != b.path ? a.path < b.path : a.writable && !b.writable;
        });
        // Every path string first: the steps point into them, and a vector that grew
        // would move short strings.
        store.paths.reserve(2 * entries.size() + security.inaccessible_paths.size());
        int slots = 0;
        for (Entry& e : entries) {
            if (e.writable) {
                e.slot = slots++;
            }
        }
        store.fds.assign(static_cast<std::size_t>(slots), -1);
        out.fds = store.fds.data();
        for (const Entry& e : entries) {
            if (e.writable) {
                store.paths.push_back(e.path);
                out.steps.push_back({MountOp::capture, store.paths.back().c_str(), e.slot,
                                     e.optional, label(e.label)});
            }
        }
        if (strict) {
            out.steps.push_back(
                {MountOp::readonly_root, "/", -1, false, label("protect_system \"strict\": /")});
        }
        for (const Entry& e : entries) {
            store.paths.push_back(e.path);
            int l = label(e.label);
            out.steps.push_back({e.writable ? MountOp::restore : MountOp::readonly,
                                 store.paths.back().c_str(), e.slot, e.optional, l});
        }
        if (security.private_tmp) {
            out.steps.push_back({MountOp::tmpfs, "/tmp", -1, false, label("private_tmp: /tmp")});
            out.steps.push_back(
                {MountOp::tmpfs, "/var/tmp", -1, true, label("private_tmp: /var/tmp")});
        }
        for (const std::string& path : security.inaccessible_paths) {
            store.paths.push_back(path);
            out.steps.push_back({MountOp::inaccessible, store.paths.back().c_str(), -1, false,
                                 label("inaccessible_paths " + path)});
        }
        if (!has_cwd) {
            char buf[PATH_MAX];
            if (getcwd(buf, sizeof buf) != nullptr) {
                store.cwd = buf;
                out.chdir_to = store.cwd.c_str();
                out.chdir_label = label("pkitd's working directory " + store.cwd);
            }
        }
    }
    if (security.capabilities) {
        out.set_capabilities = true;
        out.capabilities = *security.capabilities;
        out.ambient = run_uid != 0;
        out.capabilities_label = label("capabilities");
    }
    if (security.no_new_privileges) {
        out.no_new_privileges = true;
        out.no_new_privileges_label = label("no_new_privileges");
    }
    return out;
}

std::vector<std::string> sandbox_words(const config::SecuritySpec& security) {
    std::vector<std::string> out;
    if (security.no_new_privileges) {
        out.emplace_back("no_new_privileges");
    }
    if (security.capabilities) {
        std::string words = "capabilities";
        auto names = config::capability_names(*security.capabilities);
        if (names.empty()) {
            words += " (none)";
        }
        for (const std::string& name : names) {
            words += " " + name;
        }
        out.push_back(std::move(words));
    }
    if (security.private_tmp) {
        out.emplace_back("private_tmp");
    }
    if (security.protect_system != config::ProtectSystem::off) {
        out.push_back("protect_system " + std::string(config::to_string(security.protect_system)));
    }
    for (auto [key, paths] : {std::pair{"writable_paths", &security.writable_paths},
                              std::pair{"read_only_paths", &security.read_only_paths},
                              std::pair{"inaccessible_paths", &security.inaccessible_paths}}) {
        for (const std::string& path : *paths) {
            out.push_back(std::string(key) + " " + path);
        }
    }
    if (security.private_network) {
        out.emplace_back("private_network");
    }
    return out;
}

}  // namespace pkit::shell
