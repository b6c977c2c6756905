#include "config/capabilities.hpp"

#include <array>
#include <cctype>

namespace pkit::config {
namespace {

// Indexed by number: capabilities(7), include/uapi/linux/capability.h.
constexpr std::array<std::string_view, k_last_capability + 1> k_names{"CAP_CHOWN",
                                                                      "CAP_DAC_OVERRIDE",
                                                                      "CAP_DAC_READ_SEARCH",
                                                                      "CAP_FOWNER",
                                                                      "CAP_FSETID",
                                                                      "CAP_KILL",
                                                                      "CAP_SETGID",
                                                                      "CAP_SETUID",
                                                                      "CAP_SETPCAP",
                                                                      "CAP_LINUX_IMMUTABLE",
                                                                      "CAP_NET_BIND_SERVICE",
                                                                      "CAP_NET_BROADCAST",
                                                                      "CAP_NET_ADMIN",
                                                                      "CAP_NET_RAW",
                                                                      "CAP_IPC_LOCK",
                                                                      "CAP_IPC_OWNER",
                                                                      "CAP_SYS_MODULE",
                                                                      "CAP_SYS_RAWIO",
                                                                      "CAP_SYS_CHROOT",
                                                                      "CAP_SYS_PTRACE",
                                                                      "CAP_SYS_PACCT",
                                                                      "CAP_SYS_ADMIN",
                                                                      "CAP_SYS_BOOT",
                                                                      "CAP_SYS_NICE",
                                                                      "CAP_SYS_RESOURCE",
                                                                      "CAP_SYS_TIME",
                                                                      "CAP_SYS_TTY_CONFIG",
                                                                      "CAP_MKNOD",
                                                                      "CAP_LEASE",
                                                                      "CAP_AUDIT_WRITE",
                                                                      "CAP_AUDIT_CONTROL",
                                                                      "CAP_SETFCAP",
                                                                      "CAP_MAC_OVERRIDE",
                                                                      "CAP_MAC_ADMIN",
                                                                      "CAP_SYSLOG",
                                                                      "CAP_WAKE_ALARM",
                                                                      "CAP_BLOCK_SUSPEND",
                                                                      "CAP_AUDIT_READ",
                                                                      "CAP_PERFMON",
                                                                      "CAP_BPF",
                                                                      "CAP_CHECKPOINT_RESTORE"};

bool same_letters(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) {
        return false;
    }
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (std::toupper(static_cast<unsigned char>(a[i])) !=
            std::toupper(static_cast<unsigned char>(b[i]))) {
            return false;
        }
    }
    return true;
}

}  // namespace

std::optional<int> capability_number(std::string_view name) {
    constexpr std::string_view k_prefix = "CAP_";
    const bool prefixed =
        name.size() > k_prefix.size() && same_letters(name.substr(0, 4), k_prefix);
    const std::string_view bare = prefixed ? name.substr(k_prefix.size()) : name;
    for (std::size_t i = 0; i < k_names.size(); ++i) {
        if (same_letters(k_names[i].substr(k_prefix.size()), bare)) {
            return static_cast<int>(i);
        }
    }
    return std::nullopt;
}

std::string capability_name(int number) {
    if (number < 0 || number > k_last_capability) {
        return "CAP_?";
    }
    return std::string(k_names[static_cast<std::size_t>(number)]);
}

std::vector<std::string> capability_names(std::uint64_t mask) {
    std::vector<std::string> out;
    for (int i = 0; i <= k_last_capability; ++i) {
        if ((mask >> i) & 1U) {
            out.push_back(capability_name(i));
        }
    }
    return out;
}

std::vector<std::string_view> all_capability_names() {
    return {k_names.begin(), k_names.end()};
}

}  // namespace pkit::config
