// [security] of a service file (SPEC §19): each key's form. Whether pkitd can apply a
// protection where it runs is --check's warning (daemon/shell/launch/sandbox_check)
// and, at launch, the launch error `sandbox`.

#include <array>

#include "config/capabilities.hpp"
#include "config/load_steps.hpp"

namespace pkit::config::detail {
namespace {

constexpr std::array<std::string_view, 2> k_protect_names{"full", "strict"};
constexpr std::array<ProtectSystem, 2> k_protect_values{ProtectSystem::full, ProtectSystem::strict};

// One absolute path, normalised: repeated and trailing slashes dropped; "." and ".."
// refused rather than resolved (the launch must protect exactly the path written).
std::optional<std::string> read_path(const Diags& d, const toml::node& n, std::string_view what) {
    auto text = read_string(d, n, what);
    if (!text) {
        return std::nullopt;
    }
    if (!text->starts_with('/')) {
        d.error(pos_of(n), cat(what, ": ", quote(*text), " is not an absolute path"));
        return std::nullopt;
    }
    std::string out;
    std::string_view rest = *text;
    while (!rest.empty()) {
        rest.remove_prefix(rest.find_first_not_of('/') == std::string_view::npos
                               ? rest.size()
                               : rest.find_first_not_of('/'));
        std::string_view part = rest.substr(0, rest.find('/'));
        rest.remove_prefix(part.size());
        if (part.empty()) {
            continue;
        }
        if (part == "." || part == "..") {
            d.error(pos_of(n), cat(what, ": ", quote(*text),
                                   " has a \".\" or \"..\" component; write the path itself"));
            return std::nullopt;
        }
        out += '/';
        out += part;
    }
    return out.empty() ? std::string("/") : out;
}

std::optional<std::uint64_t> read_capabilities(const Diags& d, const toml::node& n,
                                               std::string_view what) {
    const toml::array* array = read_array(d, n, what);
    if (array == nullptr) {
        return std::nullopt;
    }
    std::uint64_t mask = 0;
    bool ok = true;
    for (const toml::node& element : *array) {
        auto name = read_string(d, element, what);
        if (!name) {
            ok = false;
            continue;
        }
        auto number = capability_number(*name);
        if (!number) {
            auto names = all_capability_names();
            std::vector<std::string> candidates(names.begin(), names.end());
            std::string upper;
            for (char c : *name) {
                upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
            }
            if (!upper.starts_with("CAP_")) {
                upper = "CAP_" + upper;
            }
            d.error(pos_of(element), cat(what, ": unknown capability ", quote(*name),
                                         did_you_mean(upper, candidates)));
            ok = false;
            continue;
        }
        mask |= std::uint64_t{1} << *number;
    }
    // A list with a bad name is not taken at all: half a bounding set is a different one.
    return ok ? std::optional(mask) : std::nullopt;
}

}  // namespace

void parse_security(const TableReader& top, SecuritySpec& out) {
    static const std::vector<std::string_view> k_keys{
        "no_new_privileges", "capabilities",    "private_tmp",        "protect_system",
        "writable_paths",    "read_only_paths", "inaccessible_paths", "private_network"};
    auto r = top.subtable("security", k_keys);
    if (!r) {
        return;
    }
    r->read("no_new_privileges", out.no_new_privileges, as_bool);
    r->read("capabilities", out.capabilities, read_capabilities);
    r->read("private_tmp", out.private_tmp, as_bool);
    r->read("protect_system", out.protect_system, as_enum(k_protect_names, k_protect_values));
    auto paths = [](const Diags& d, const toml::node& n, std::string_view w) {
        return read_each(d, n, w, read_path);
    };
    r->read("writable_paths", out.writable_paths, paths);
    r->read("read_only_paths", out.read_only_paths, paths);
    r->read("inaccessible_paths", out.inaccessible_paths, paths);
    r->read("private_network", out.private_network, as_bool);
    for (std::string_view key : k_keys) {
        if (r->get(key) != nullptr) {
            Pos at = r->key_pos(key);
            out.at.push_back({std::string(key), at.line, at.column});
        }
    }
    r->report_unknown();
}

}  // namespace pkit::config::detail
