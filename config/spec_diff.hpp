#pragma once
// The keys in which two definitions of a service differ, as a service file names them
// ("command", "restart.order", "env.PORT"), with each side's value in a short display
// form: what `pkitctl reload --dry-run` shows (SPEC §21). Pure.
//
// The table of keys lives in spec_diff.cpp, one row a key of ServiceSpec; a unit test
// holds it to the loader's own list of keys (load_text's TableKeys), so a key added to
// the loader without a row here fails the build's tests, and a difference the table
// misses still shows as "(definition)" rather than as no difference.

#include <optional>
#include <string>
#include <vector>

#include "config/model.hpp"

namespace pkit::config {

struct KeyChange {
    std::string key;                       // dotted, as in the file: "ready.http"
    std::optional<std::string> old_value;  // display form; nullopt: not set
    std::optional<std::string> new_value;
    bool operator==(const KeyChange&) const = default;
};

// The longest value shown, in bytes; a longer one is cut at a character boundary and
// ends in "...".
inline constexpr std::size_t k_max_value_text = 80;

// Every key whose value differs between `before` and `after`, in the file's order of
// sections (the top-level keys, then [restart], [storm], ... [resources], schedule).
// Empty exactly when before == after. Names and instance numbers are not compared.
std::vector<KeyChange> spec_diff(const ServiceSpec& before, const ServiceSpec& after);

// How a service's group differs (SPEC §8: a changed group changes its members):
// "group" when it moved to another group (or none), else "groups.NAME.KEY" for each
// key of its group's table in pkitd.toml that differs. Null: no group.
std::vector<KeyChange> group_diff(const GroupSpec* before, const GroupSpec* after);

// Every dotted key spec_diff() can name, table by table as TableKeys has them ("" for
// the top level); tables whose keys are free (env, rlimits) list none. For the test
// that holds the table to the loader's keys.
std::vector<std::pair<std::string, std::string>> spec_diff_keys();

}  // namespace pkit::config
