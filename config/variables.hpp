#pragma once
// Variables in service files (SPEC §13): `${VAR}`, `${VAR:-default}` (the default used
// when VAR is unset or empty, and itself expanded, so defaults nest), `$$` for a literal
// `$`; any other `$` is kept as it is, so an `sh -c` script keeps its own `$HOME`.
// A name is one or more of [A-Za-z0-9_]. Pure: the loader checks the syntax with it and
// the launcher expands with it, in the parent, before the clone.
//
// Defaults nest at most k_max_variable_depth deep: a text nesting deeper is a syntax
// error (too_deep), found by one linear pass before anything recurses, so no text, of
// any size, can overflow the stack or take more than a pass a level.

#include <cstddef>
#include <expected>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace pkit::config {

// The most "${" a text may nest inside one another: "${A}" is 1 deep,
// "${A:-${B}}" 2.
inline constexpr int k_max_variable_depth = 32;

struct VariableError {
    enum class Kind {
        unterminated,  // "${" without its "}"
        empty_name,    // "${}" or "${:-x}"
        bad_name,      // a character outside [A-Za-z0-9_] in the name
        undefined,     // a variable without a value or a default (at launch only)
        too_deep,      // a "${" nested more than k_max_variable_depth deep
    };
    Kind kind = Kind::unterminated;
    std::size_t offset = 0;  // of the "${" in the text (too_deep: the first one too deep)
    std::string name;        // the variable, for bad_name and undefined
    // "undefined variable \"PORT\"", "\"${\" without a closing \"}\"", ...
    std::string message() const;
};

// The value of a variable, or nullopt when it is not defined.
using VariableLookup = std::function<std::optional<std::string_view>(std::string_view name)>;

// `text` with every variable replaced. Fails on the first syntax error, or on a variable
// that `lookup` does not define and that has no default. A default is looked at only
// when it is used, but its syntax is checked always.
std::expected<std::string, VariableError> expand_variables(std::string_view text,
                                                           const VariableLookup& lookup);

// Whether `text` holds anything expand_variables() would change: a "${" or a "$$".
bool has_variables(std::string_view text);

// The syntax check alone: the first syntax error in `text`, if any.
std::optional<VariableError> check_variables(std::string_view text);

}  // namespace pkit::config
