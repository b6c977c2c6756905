#pragma once
// Account names to ids, for the loader's check of `user` and `group` when pkitd is not
// root (principal.cpp). Not in pkitconfig: each program links one definition.
//   - config/accounts_nss.cpp (library pkitconfig_accounts): getpwnam_r/getgrnam_r, for
//     pkitd and the tests;
//   - ctl/accounts_getent.cpp: getent(1), for pkitctl, which is linked statically (it
//     runs once a command; bench/README.md) and so must not call NSS itself: a
//     static glibc that meets an NSS module (sssd, LDAP) would load a second libc.
// Both return nullopt for a name that does not resolve.

#include <cstdint>
#include <optional>
#include <string>

namespace pkit::config {

struct Principal;

std::optional<std::uint32_t> user_id(const std::string& name);
std::optional<std::uint32_t> group_id(const std::string& name);

// A configured user or group (model.hpp) as an id: its number, or its name looked up
// as above; nullopt when it is unset or its name does not resolve (principal.cpp).
std::optional<std::uint32_t> user_id(const Principal& user);
std::optional<std::uint32_t> group_id(const Principal& group);

}  // namespace pkit::config
