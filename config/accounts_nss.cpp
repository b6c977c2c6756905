// config/accounts.hpp through the C library's name service (NSS): pkitd's lookups.

#include <grp.h>
#include <pwd.h>

#include <vector>

#include "config/accounts.hpp"

namespace pkit::config {

std::optional<std::uint32_t> user_id(const std::string& name) {
    passwd entry{};
    passwd* found = nullptr;
    std::vector<char> buffer(16384);
    if (getpwnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found) != 0 ||
        found == nullptr) {
        return std::nullopt;
    }
    return found->pw_uid;
}

std::optional<std::uint32_t> group_id(const std::string& name) {
    group entry{};
    group* found = nullptr;
    std::vector<char> buffer(16384);
    if (getgrnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found) != 0 ||
        found == nullptr) {
        return std::nullopt;
    }
    return found->gr_gid;
}

}  // namespace pkit::config
