// Positioned diagnostics and typed reads of toml++ nodes. This file also compiles
// toml++'s implementation into pkitconfig (toml++'s "compiled library" mode:
// TOML_HEADER_ONLY=0 for every file of pkitconfig, TOML_IMPLEMENTATION in this one),
// so that neither pkitd nor pkitctl loads libtomlplusplus.so (config/CMakeLists.txt).

#define TOML_IMPLEMENTATION 1
#include "config/toml_reader.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "config/values.hpp"

namespace pkit::config::detail {

Pos pos_of(const toml::node& node) {
    const auto& begin = node.source().begin;
    return {static_cast<int>(std::max(begin.line, 1u)),
            static_cast<int>(std::max(begin.column, 1u))};
}

Pos pos_of(const toml::key& key) {
    const auto& begin = key.source().begin;
    return {static_cast<int>(std::max(begin.line, 1u)),
            static_cast<int>(std::max(begin.column, 1u))};
}

Pos entry_pos(const toml::key& key, const toml::node& node) {
    const toml::table* table = node.as_table();
    if (table != nullptr && !table->is_inline()) {
        return pos_of(node);
    }
    return pos_of(key);
}

void Diags::error(Pos pos, std::string message) const {
    m_out->push_back(Diagnostic{m_file, pos.line, pos.column, std::move(message)});
}

void Diags::note_table(const std::string& path, const std::vector<std::string_view>& keys) const {
    if (m_tables != nullptr) {
        auto& known = (*m_tables)[path];
        known.insert(keys.begin(), keys.end());
    }
}

std::string quote(std::string_view text) {
    std::string out = "\"";
    for (char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned char>(c));
            out += hex;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

std::string number_text(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", value);
    return text;
}

std::string_view type_name(const toml::node& node) {
    switch (node.type()) {
        case toml::node_type::string:
            return "a string";
        case toml::node_type::integer:
            return "an integer";
        case toml::node_type::floating_point:
            return "a float";
        case toml::node_type::boolean:
            return "a boolean";
        case toml::node_type::array:
            return "an array";
        case toml::node_type::table:
            return "a table";
        case toml::node_type::date:
            return "a date";
        case toml::node_type::time:
            return "a time";
        case toml::node_type::date_time:
            return "a date-time";
        case toml::node_type::none:
            break;
    }
    return "nothing";
}

namespace {

void expected(const Diags& d, const toml::node& n, std::string_view what, std::string_view wanted) {
    d.error(pos_of(n), cat(what, ": expected ", wanted, ", got ", type_name(n)));
}

}  // namespace

std::optional<bool> read_bool(const Diags& d, const toml::node& n, std::string_view what) {
    if (auto value = n.value_exact<bool>()) {
        return value;
    }
    expected(d, n, what, "true or false");
    return std::nullopt;
}

std::optional<std::int64_t> read_int(const Diags& d, const toml::node& n, std::string_view what,
                                     std::int64_t min, std::int64_t max) {
    auto value = n.value_exact<std::int64_t>();
    if (!value) {
        expected(d, n, what, "an integer");
        return std::nullopt;
    }
    if (*value < min || *value > max) {
        if (max == std::numeric_limits<std::int64_t>::max() ||
            max == std::numeric_limits<int>::max()) {
            d.error(pos_of(n), cat(what, ": must be at least ", std::to_string(min), ", got ",
                                   std::to_string(*value)));
        } else {
            d.error(pos_of(n), cat(what, ": must be between ", std::to_string(min), " and ",
                                   std::to_string(max), ", got ", std::to_string(*value)));
        }
        return std::nullopt;
    }
    return value;
}

std::optional<double> read_number(const Diags& d, const toml::node& n, std::string_view what,
                                  double min, bool exclusive) {
    if (!n.is_number()) {
        expected(d, n, what, "a number");
        return std::nullopt;
    }
    double value = n.value<double>().value_or(0.0);
    bool low = exclusive ? !(value > min) : !(value >= min);
    if (!std::isfinite(value) || low) {
        d.error(pos_of(n),
                cat(what, ": must be a finite number ", exclusive ? "above " : "of at least ",
                    number_text(min), ", got ", number_text(value)));
        return std::nullopt;
    }
    return value;
}

std::optional<std::string> read_string(const Diags& d, const toml::node& n, std::string_view what,
                                       bool allow_empty) {
    const auto* value = n.as_string();
    if (value == nullptr) {
        expected(d, n, what, "a string");
        return std::nullopt;
    }
    const std::string& text = value->get();
    if (text.empty() && !allow_empty) {
        d.error(pos_of(n), cat(what, ": must not be empty"));
        return std::nullopt;
    }
    if (text.find('\0') != std::string::npos) {
        d.error(pos_of(n), cat(what, ": must not contain a NUL character"));
        return std::nullopt;
    }
    return text;
}

std::optional<Duration> read_duration(const Diags& d, const toml::node& n, std::string_view what,
                                      bool positive) {
    std::optional<Duration> value;
    if (n.is_number()) {
        double seconds = n.value<double>().value_or(0.0);
        if (seconds < 0) {
            d.error(pos_of(n), cat(what, ": must not be negative"));
            return std::nullopt;
        }
        value = duration_from_seconds(seconds);
        if (!value) {
            d.error(pos_of(n), cat(what, ": ", number_text(seconds), " seconds is out of range"));
            return std::nullopt;
        }
    } else if (const auto* text = n.as_string()) {
        value = parse_duration(text->get());
        if (!value) {
            std::string_view why =
                text->get().starts_with('-') ? "must not be negative" : "is not a duration";
            d.error(pos_of(n), cat(what, ": ", quote(text->get()), " ", why,
                                   " (use seconds as a number, or a string like \"250ms\", "
                                   "\"5s\", \"1m30s\", \"2h\")"));
            return std::nullopt;
        }
    } else {
        expected(d, n, what, "a duration (seconds as a number, or a string like \"5s\")");
        return std::nullopt;
    }
    if (positive && *value == Duration::zero()) {
        d.error(pos_of(n), cat(what, ": must be more than 0"));
        return std::nullopt;
    }
    return value;
}

std::optional<int> read_signal(const Diags& d, const toml::node& n, std::string_view what) {
    if (auto number = n.value_exact<std::int64_t>()) {
        if (*number < 1 || *number > 64) {
            d.error(pos_of(n),
                    cat(what, ": signal numbers go from 1 to 64, got ", std::to_string(*number)));
            return std::nullopt;
        }
        return static_cast<int>(*number);
    }
    const auto* text = n.as_string();
    if (text == nullptr) {
        expected(d, n, what, "a signal name or number");
        return std::nullopt;
    }
    if (auto signo = parse_signal(text->get())) {
        return signo;
    }
    std::string upper = text->get();
    std::ranges::transform(upper, upper.begin(), [](char c) {
        return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
    });
    if (upper != text->get() && parse_signal(upper)) {
        d.error(pos_of(n), cat(what, ": unknown signal ", quote(text->get()),
                               "; signal names are upper case: ", quote(upper)));
    } else {
        d.error(pos_of(n), cat(what, ": unknown signal ", quote(text->get())));
    }
    return std::nullopt;
}

std::optional<std::uint64_t> read_size(const Diags& d, const toml::node& n, std::string_view what) {
    if (auto number = n.value_exact<std::int64_t>()) {
        if (*number < 0) {
            d.error(pos_of(n), cat(what, ": must not be negative"));
            return std::nullopt;
        }
        return static_cast<std::uint64_t>(*number);
    }
    const auto* text = n.as_string();
    if (text == nullptr) {
        expected(d, n, what, "a size (bytes as an integer, or a string like \"256KiB\")");
        return std::nullopt;
    }
    if (auto bytes = parse_size(text->get())) {
        return bytes;
    }
    d.error(pos_of(n), cat(what, ": ", quote(text->get()),
                           " is not a size (use bytes as an integer, or a string like \"512B\", "
                           "\"256KiB\", \"1MiB\", \"2GiB\")"));
    return std::nullopt;
}

}  // namespace pkit::config::detail
