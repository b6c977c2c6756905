#pragma once
// `pkitctl status` at scale (SPEC §17): NAME arguments that are globs (`web-*`,
// `api@*`), `--state STATE[,STATE]...`, and the summary line a long table ends with on
// a terminal. Pure functions of the rows pkitd sent; --state takes the states of SPEC
// §5 only (SPEC §21: a state it does not know is a usage error, not an empty table).

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/status.hpp"

namespace pkit::ctl {

// Whether a NAME argument is a glob (fnmatch(3): `*`, `?`, `[...]`) rather than a name.
bool is_pattern(std::string_view name);

// Every state a service can be in (SPEC §5), in the order of the lifecycle.
const std::vector<std::string>& service_states();

// The states of --state options, each "a,b" split at commas, in order, once each.
// Throws a usage error (exit 2) for an empty word or one that is not a state, naming
// the valid ones (and the closest, when it looks like a typo).
std::vector<std::string> split_states(const std::vector<std::string>& options);

// A row as the selection sees it.
struct NameState {
    std::string_view name;
    std::string_view state;
};

// The rows as the selection sees them (views into `rows`, which must outlive them).
std::vector<NameState> name_states(const std::vector<proto::ServiceStatus>& rows);

// The indices of `rows`, in their order, that one of `names` selects (every row when
// `names` is empty), by name or by glob, and whose state is one of `states` (any when
// empty). A name that is no row's throws CtlError(1) as pkitd's unknown_service does,
// with the closest name as a suggestion; a glob that matches no row throws
// CtlError(1) too, so a typo in a pattern is not an empty table.
std::vector<std::size_t> select_rows(const std::vector<NameState>& rows,
                                     const std::vector<std::string>& names,
                                     const std::vector<std::string>& states);

// `names` (the NAME arguments of a command over services) with each glob replaced by
// the names of the rows it matches, in the rows' order; a plain name is kept as given
// (pkitd resolves it: a file's name stands for all its instances, an unknown one is
// its error); each name once. A glob that matches no row throws CtlError(1) as
// select_rows() does, so a typo in a pattern is an error like an unknown name.
std::vector<std::string> expand_patterns(const std::vector<NameState>& rows,
                                         const std::vector<std::string>& names);

// "40 services: 37 running, 2 backoff, 1 failed": how many rows are in each state,
// most first (ties in name order).
std::string summary_line(const std::vector<NameState>& rows);

// `text` cut to `columns` terminal columns, its end replaced by "…" when cut.
// Counts UTF-8 code points as one column each.
std::string fit_columns(std::string_view text, std::size_t columns);

// The terminal columns `text` takes (UTF-8 code points).
std::size_t columns_of(std::string_view text);

// The narrower width of a table's first column (the names) that fits the table into
// `width` terminal columns, given each column's width and two blanks between columns;
// never below 12 columns. nullopt when it fits already, `width` is 0 (no limit), or
// the names are already that narrow. Names give way first: the figures stay whole.
std::optional<std::size_t> narrowed_names(const std::vector<std::size_t>& widths,
                                          std::size_t width);

}  // namespace pkit::ctl
