// Keys whose behaviour pkitd does not have yet. With LoadOptions::reject_unsupported
// a file that uses one gets a positioned "not supported yet" error, so nothing the
// operator wrote is silently ignored. The values are still parsed and checked.

#include "config/load_steps.hpp"

namespace pkit::config::detail {
namespace {

struct Unsupported {
    FileKind kind;
    std::string_view key;  // a top-level key or table of that kind of file
};

// When a feature lands, delete its line here (and its mark in man/pkit.toml.5).
constexpr Unsupported k_unsupported[] = {
    {FileKind::service, "escalate"},
    {FileKind::daemon, "root"},
    {FileKind::daemon, "groups"},
};

}  // namespace

void reject_unsupported(const Diags& d, const toml::table& root, FileKind kind) {
    for (const Unsupported& entry : k_unsupported) {
        if (entry.kind != kind) {
            continue;
        }
        auto it = root.find(entry.key);
        if (it == root.end()) {
            continue;
        }
        std::string shown =
            it->second.is_table() ? cat("[", entry.key, "]") : std::string(entry.key);
        d.error(entry_pos(it->first, it->second), cat(quote(shown), " is not supported yet"));
    }
}

}  // namespace pkit::config::detail
