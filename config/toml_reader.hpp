#pragma once
// Internal to pkitconfig (only config/*.cpp include this): positioned diagnostics
// and typed reads of toml++ nodes. Every read reports its own problem and returns
// nullopt, so the caller simply goes on and one pass finds every error.

#include <toml++/toml.h>

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/loader.hpp"
#include "config/suggest.hpp"

namespace pkit::config::detail {

struct Pos {
    int line = 1;
    int column = 1;
};

// Where a node starts: the value, the `[` of a table header, the `{` of an inline
// table, the first element's `[` of an array.
Pos pos_of(const toml::node& node);
Pos pos_of(const toml::key& key);
// Where to report something about `key = node` as a whole: the `[` for a header
// table, else the key.
Pos entry_pos(const toml::key& key, const toml::node& node);

// The diagnostics of one file, appended to a list shared by the whole load.
class Diags {
public:
    Diags(std::string file, std::vector<Diagnostic>& out) : m_file(std::move(file)), m_out(&out) {}
    const std::string& file() const { return m_file; }
    void error(Pos pos, std::string message) const;
    // Where TableReader notes each table it reads and its keys; null: nowhere.
    void note_tables(TableKeys* tables) { m_tables = tables; }
    void note_table(const std::string& path, const std::vector<std::string_view>& keys) const;

private:
    std::string m_file;
    std::vector<Diagnostic>* m_out;
    TableKeys* m_tables = nullptr;
};

// Concatenates strings, string views and literals: g++ 12 has no std::format.
template <class... Parts>
std::string cat(const Parts&... parts) {
    std::string out;
    (out.append(std::string_view(parts)), ...);
    return out;
}
// A double the short way: "2", "0.5", "1e+20".
std::string number_text(double value);

// `text` in double quotes, with quotes, backslashes and control characters escaped.
std::string quote(std::string_view text);
// "a string", "an integer", ... for "expected X, got Y" messages.
std::string_view type_name(const toml::node& node);

// Each reader checks one value; `what` names it in messages ("restart.policy").
std::optional<bool> read_bool(const Diags& d, const toml::node& n, std::string_view what);
std::optional<std::int64_t> read_int(const Diags& d, const toml::node& n, std::string_view what,
                                     std::int64_t min, std::int64_t max);
// An integer or a float; finite and at least `min` (or more than it, if `exclusive`).
std::optional<double> read_number(const Diags& d, const toml::node& n, std::string_view what,
                                  double min, bool exclusive);
// A string without NUL characters; non-empty unless `allow_empty`.
std::optional<std::string> read_string(const Diags& d, const toml::node& n, std::string_view what,
                                       bool allow_empty = false);
// A number of seconds or a duration string; more than zero if `positive`.
std::optional<Duration> read_duration(const Diags& d, const toml::node& n, std::string_view what,
                                      bool positive = false);
std::optional<int> read_signal(const Diags& d, const toml::node& n, std::string_view what);
std::optional<std::uint64_t> read_size(const Diags& d, const toml::node& n, std::string_view what);
// A non-empty array of strings whose first element is non-empty.
std::optional<std::vector<std::string>> read_argv(const Diags& d, const toml::node& n,
                                                  std::string_view what);
// The array itself, or nullptr after reporting a wrong type.
const toml::array* read_array(const Diags& d, const toml::node& n, std::string_view what);
// One of `names`; an unknown name is reported with the choices or a suggestion.
std::optional<std::size_t> read_choice(const Diags& d, const toml::node& n, std::string_view what,
                                       std::span<const std::string_view> names);

// The readers above as function objects with their usual options, for
// TableReader::read and read_each.
inline constexpr auto as_bool = [](const Diags& d, const toml::node& n, std::string_view w) {
    return read_bool(d, n, w);
};
inline constexpr auto as_string = [](const Diags& d, const toml::node& n, std::string_view w) {
    return read_string(d, n, w);
};
inline constexpr auto as_duration = [](const Diags& d, const toml::node& n, std::string_view w) {
    return read_duration(d, n, w);
};
inline constexpr auto as_positive_duration = [](const Diags& d, const toml::node& n,
                                                std::string_view w) {
    return read_duration(d, n, w, true);
};
inline constexpr auto as_signal = [](const Diags& d, const toml::node& n, std::string_view w) {
    return read_signal(d, n, w);
};
inline constexpr auto as_argv = [](const Diags& d, const toml::node& n, std::string_view w) {
    return read_argv(d, n, w);
};
inline auto as_int(std::int64_t min, std::int64_t max) {
    return [=](const Diags& d, const toml::node& n, std::string_view w) {
        return read_int(d, n, w, min, max);
    };
}
// An exit code, 0..255.
inline constexpr auto as_exit_code = [](const Diags& d, const toml::node& n, std::string_view w) {
    auto code = read_int(d, n, w, 0, 255);
    return code ? std::optional<int>(static_cast<int>(*code)) : std::nullopt;
};
// One of `values`, named by the parallel `names`.
template <class E, std::size_t N>
auto as_enum(const std::array<std::string_view, N>& names, const std::array<E, N>& values) {
    return [&names, &values](const Diags& d, const toml::node& n, std::string_view w) {
        auto index = read_choice(d, n, w, names);
        return index ? std::optional<E>(values[*index]) : std::nullopt;
    };
}

// Each element through `read_element`; nullopt if the value is not an array. Bad
// elements are reported (at the element) and left out.
template <class Fn>
auto read_each(const Diags& d, const toml::node& n, std::string_view what, Fn read_element)
    -> std::optional<std::vector<typename decltype(read_element(d, n, what))::value_type>> {
    const toml::array* array = read_array(d, n, what);
    if (array == nullptr) {
        return std::nullopt;
    }
    std::vector<typename decltype(read_element(d, n, what))::value_type> out;
    for (const toml::node& element : *array) {
        if (auto value = read_element(d, element, what)) {
            out.push_back(std::move(*value));
        }
    }
    return out;
}

// The keys of one table: hands out the known ones and reports the rest.
class TableReader {
public:
    // `path` is the table's dotted key path ("restart", "groups.web"; "" for the
    // top level); `keys` every key valid in it, for lookups and suggestions.
    TableReader(const Diags& d, const toml::table& table, std::string path,
                std::vector<std::string_view> keys, Pos header);

    const Diags& diags() const { return *m_diags; }
    const toml::table& table() const { return *m_table; }
    const std::string& path() const { return m_path; }
    // The `[` of the header, or 1:1 for the top level: where missing keys go.
    Pos header_pos() const { return m_header; }

    // The value of a known key, or nullptr when it is absent.
    const toml::node* get(std::string_view key) const;
    // The key's own position; header_pos() when it is absent.
    Pos key_pos(std::string_view key) const;
    // "restart.policy", or "command" at the top level.
    std::string what(std::string_view key) const;

    // Reads `key` with `fn` into `out` when present and valid; true if it did.
    template <class T, class Fn>
    bool read(std::string_view key, T& out, Fn fn) const {
        const toml::node* node = get(key);
        if (node == nullptr) {
            return false;
        }
        auto value = fn(*m_diags, *node, what(key));
        if (!value) {
            return false;
        }
        out = std::move(*value);
        return true;
    }

    // The table under `key`, with its reader's header position; nullopt when
    // absent or (reported) not a table.
    std::optional<TableReader> subtable(std::string_view key,
                                        std::vector<std::string_view> keys) const;

    // Reports every key not in `keys`, with a suggestion when one is close.
    void report_unknown() const;

private:
    const Diags* m_diags;
    const toml::table* m_table;
    std::string m_path;
    std::vector<std::string_view> m_keys;
    Pos m_header;
};

}  // namespace pkit::config::detail
