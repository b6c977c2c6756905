// `user` and `group`: a name or a numeric id. Unknown names are not a load error
// (the account may be created later; the launcher reports `bad_user`), except
// when pkitd is not root: then only pkitd's own user and group are possible, and a
// name that does not resolve cannot be shown to be pkitd's own.

#include "config/accounts.hpp"
#include "config/load_steps.hpp"

namespace pkit::config::detail {
namespace {

// The largest id that is not (uid_t)-1, which means "no change" to set*id().
constexpr std::int64_t k_max_id = 0xfffffffeLL;

std::string describe(const Principal& who) {
    return who.name ? quote(*who.name) : std::to_string(who.id.value_or(0));
}

}  // namespace

std::optional<Principal> read_principal(const Diags& d, const toml::node& n,
                                        std::string_view what) {
    if (n.is_string()) {
        auto name = read_string(d, n, what);
        return name ? std::optional<Principal>(Principal{.name = std::move(*name)}) : std::nullopt;
    }
    if (n.is_integer()) {
        auto id = read_int(d, n, what, 0, k_max_id);
        return id ? std::optional<Principal>(Principal{.id = static_cast<std::uint32_t>(*id)})
                  : std::nullopt;
    }
    d.error(pos_of(n), cat(what, ": expected a name or a numeric id, got ", type_name(n)));
    return std::nullopt;
}

void parse_user_group(const TableReader& top, const LoadOptions& options, Principal& user,
                      Principal& group) {
    auto as_principal = [](const Diags& d, const toml::node& n, std::string_view w) {
        return read_principal(d, n, w);
    };
    bool has_user = top.read("user", user, as_principal);
    bool has_group = top.read("group", group, as_principal);
    if (options.as_root) {
        return;
    }
    if (has_user) {
        auto uid = user_id(user);
        if (uid != options.uid) {
            top.diags().error(
                pos_of(*top.get("user")),
                cat("user ", describe(user), ": pkitd runs as uid ", std::to_string(options.uid),
                    ", not root; it cannot switch users"));
        }
    }
    if (has_group) {
        auto gid = group_id(group);
        if (gid != options.gid) {
            top.diags().error(
                pos_of(*top.get("group")),
                cat("group ", describe(group), ": pkitd runs as gid ", std::to_string(options.gid),
                    ", not root; it cannot switch groups"));
        }
    }
}

}  // namespace pkit::config::detail

namespace pkit::config {

std::optional<std::uint32_t> user_id(const Principal& user) {
    if (user.id) {
        return user.id;
    }
    return user.name ? user_id(*user.name) : std::nullopt;
}

std::optional<std::uint32_t> group_id(const Principal& group) {
    if (group.id) {
        return group.id;
    }
    return group.name ? group_id(*group.name) : std::nullopt;
}

}  // namespace pkit::config
