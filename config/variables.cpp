#include "config/variables.hpp"

namespace pkit::config {

namespace {

bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// The offset of the "}" closing the "${" at `open`, counting nested "${"..."}" pairs in
// a default; npos when there is none.
std::size_t closing_brace(std::string_view text, std::size_t open) {
    int depth = 0;
    for (std::size_t i = open + 2; i < text.size(); ++i) {
        if (text[i] == '$' && i + 1 < text.size() && text[i + 1] == '$') {
            ++i;  // "$$" is a literal: "$${" opens nothing
        } else if (text[i] == '$' && i + 1 < text.size() && text[i + 1] == '{') {
            ++depth;
            ++i;
        } else if (text[i] == '}') {
            if (depth == 0) {
                return i;
            }
            --depth;
        }
    }
    return std::string_view::npos;
}

// The offset of the first "${" of `text` nested more than k_max_variable_depth deep, or
// npos. One pass, counting "${" and "}" as closing_brace() and expand_into() pair them
// (a "}" with nothing open is plain text, "$$" is a literal), so that expand_into(),
// run only on texts it passed, recurses at most k_max_variable_depth times.
std::size_t too_deep_at(std::string_view text) {
    int depth = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '$' && i + 1 < text.size() && text[i + 1] == '$') {
            ++i;
        } else if (text[i] == '$' && i + 1 < text.size() && text[i + 1] == '{') {
            if (++depth > k_max_variable_depth) {
                return i;
            }
            ++i;
        } else if (text[i] == '}' && depth > 0) {
            --depth;
        }
    }
    return std::string_view::npos;
}

// Expands `text` (whose offsets start at `base` in the original) into `out`; with a null
// `lookup`, only checks the syntax, defaults included. Recurses once a level of
// defaults: only for a text too_deep_at() passed.
std::optional<VariableError> expand_into(std::string_view text, std::size_t base,
                                         const VariableLookup* lookup, std::string& out) {
    std::size_t i = 0;
    while (i < text.size()) {
        auto dollar = text.find('$', i);
        if (dollar == std::string_view::npos) {
            out.append(text.substr(i));
            break;
        }
        out.append(text.substr(i, dollar - i));
        char next = dollar + 1 < text.size() ? text[dollar + 1] : '\0';
        if (next == '$') {
            out.push_back('$');
            i = dollar + 2;
            continue;
        }
        if (next != '{') {
            out.push_back('$');
            i = dollar + 1;
            continue;
        }
        std::size_t close = closing_brace(text, dollar);
        if (close == std::string_view::npos) {
            return VariableError{VariableError::Kind::unterminated, base + dollar, {}};
        }
        std::string_view body = text.substr(dollar + 2, close - dollar - 2);
        auto marker = body.find(":-");
        std::string_view name = body.substr(0, marker);
        if (name.empty()) {
            return VariableError{VariableError::Kind::empty_name, base + dollar, {}};
        }
        for (char c : name) {
            if (!name_char(c)) {
                return VariableError{VariableError::Kind::bad_name, base + dollar,
                                     std::string(name)};
            }
        }
        std::optional<std::string_view> fallback;
        if (marker != std::string_view::npos) {
            fallback = body.substr(marker + 2);
        }
        std::size_t fallback_base = base + dollar + 2 + name.size() + 2;
        if (lookup == nullptr) {
            if (fallback) {
                std::string scratch;
                if (auto error = expand_into(*fallback, fallback_base, nullptr, scratch)) {
                    return error;
                }
            }
        } else {
            auto value = (*lookup)(name);
            if (value && !(fallback && value->empty())) {
                out.append(*value);
            } else if (fallback) {
                if (auto error = expand_into(*fallback, fallback_base, lookup, out)) {
                    return error;
                }
            } else {
                return VariableError{VariableError::Kind::undefined, base + dollar,
                                     std::string(name)};
            }
        }
        i = close + 1;
    }
    return std::nullopt;
}

}  // namespace

std::string VariableError::message() const {
    switch (kind) {
        case Kind::unterminated:
            return "\"${\" without a closing \"}\"";
        case Kind::empty_name:
            return "\"${}\" names no variable";
        case Kind::bad_name:
            return "\"" + name +
                   "\" is not a variable name (letters, digits and \"_\"; a default is written "
                   "${NAME:-default})";
        case Kind::undefined:
            return "undefined variable \"" + name + "\"";
        case Kind::too_deep:
            return "variables nested more than " + std::to_string(k_max_variable_depth) + " deep";
    }
    return {};
}

std::expected<std::string, VariableError> expand_variables(std::string_view text,
                                                           const VariableLookup& lookup) {
    // The syntax is checked whole first, so an error in a default that this lookup did
    // not need is still an error, whatever the environment.
    if (auto error = check_variables(text)) {
        return std::unexpected(std::move(*error));
    }
    std::string out;
    out.reserve(text.size());
    if (auto error = expand_into(text, 0, &lookup, out)) {
        return std::unexpected(std::move(*error));
    }
    return out;
}

bool has_variables(std::string_view text) {
    return text.find("${") != std::string_view::npos || text.find("$$") != std::string_view::npos;
}

std::optional<VariableError> check_variables(std::string_view text) {
    if (auto at = too_deep_at(text); at != std::string_view::npos) {
        return VariableError{VariableError::Kind::too_deep, at, {}};
    }
    std::string scratch;
    return expand_into(text, 0, nullptr, scratch);
}

}  // namespace pkit::config
