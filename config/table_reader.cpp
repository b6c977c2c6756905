// Arrays, choices, and the key bookkeeping of TableReader.

#include <algorithm>

#include "config/toml_reader.hpp"

namespace pkit::config::detail {

const toml::array* read_array(const Diags& d, const toml::node& n, std::string_view what) {
    const toml::array* array = n.as_array();
    if (array == nullptr) {
        d.error(pos_of(n), cat(what, ": expected an array, got ", type_name(n)));
    }
    return array;
}

std::optional<std::vector<std::string>> read_argv(const Diags& d, const toml::node& n,
                                                  std::string_view what) {
    const toml::array* array = n.as_array();
    if (array == nullptr) {
        d.error(pos_of(n), cat(what, ": expected an array of strings, got ", type_name(n)));
        return std::nullopt;
    }
    if (array->empty()) {
        d.error(pos_of(n), cat(what, ": must not be empty (the program comes first)"));
        return std::nullopt;
    }
    std::vector<std::string> argv;
    bool ok = true;
    for (std::size_t i = 0; i < array->size(); ++i) {
        // Arguments may be empty strings; the program may not.
        const toml::node& element = (*array)[i];
        if (i == 0 && element.is_string() && element.as_string()->get().empty()) {
            d.error(pos_of(element), cat(what,
                                         ": the program (the first element) must not be "
                                         "empty"));
            ok = false;
            continue;
        }
        auto arg = read_string(d, element, what, true);
        if (arg) {
            argv.push_back(std::move(*arg));
        } else {
            ok = false;
        }
    }
    if (!ok) {
        return std::nullopt;
    }
    return argv;
}

std::optional<std::size_t> read_choice(const Diags& d, const toml::node& n, std::string_view what,
                                       std::span<const std::string_view> names) {
    const auto* text = n.as_string();
    if (text == nullptr) {
        d.error(pos_of(n), cat(what, ": expected a string, got ", type_name(n)));
        return std::nullopt;
    }
    auto it = std::ranges::find(names, std::string_view(text->get()));
    if (it != names.end()) {
        return static_cast<std::size_t>(it - names.begin());
    }
    std::string message = cat(what, ": unknown value ", quote(text->get()));
    if (auto guess = closest(text->get(), names)) {
        message += cat("; did you mean ", quote(*guess), "?");
    } else {
        message += " (expected ";
        for (std::size_t i = 0; i < names.size(); ++i) {
            if (i > 0) {
                message += i + 1 == names.size() ? " or " : ", ";
            }
            message += quote(names[i]);
        }
        message += ")";
    }
    d.error(pos_of(n), std::move(message));
    return std::nullopt;
}

TableReader::TableReader(const Diags& d, const toml::table& table, std::string path,
                         std::vector<std::string_view> keys, Pos header)
    : m_diags(&d),
      m_table(&table),
      m_path(std::move(path)),
      m_keys(std::move(keys)),
      m_header(header) {
    d.note_table(m_path, m_keys);
}

const toml::node* TableReader::get(std::string_view key) const {
    return m_table->get(key);
}

Pos TableReader::key_pos(std::string_view key) const {
    auto it = m_table->find(key);
    return it == m_table->end() ? m_header : pos_of(it->first);
}

std::string TableReader::what(std::string_view key) const {
    return m_path.empty() ? std::string(key) : cat(m_path, ".", key);
}

std::optional<TableReader> TableReader::subtable(std::string_view key,
                                                 std::vector<std::string_view> keys) const {
    auto it = m_table->find(key);
    if (it == m_table->end()) {
        return std::nullopt;
    }
    const toml::table* table = it->second.as_table();
    if (table == nullptr) {
        m_diags->error(pos_of(it->second),
                       cat(what(key), ": expected a table, got ", type_name(it->second)));
        return std::nullopt;
    }
    return TableReader(*m_diags, *table, what(key), std::move(keys),
                       entry_pos(it->first, it->second));
}

void TableReader::report_unknown() const {
    for (const auto& [key, node] : *m_table) {
        if (std::ranges::find(m_keys, key.str()) != m_keys.end()) {
            continue;
        }
        auto guess = closest(key.str(), m_keys);
        const toml::table* table = node.as_table();
        if (table != nullptr && !table->is_inline()) {
            // A header of its own: name it the way it is written.
            std::string message = cat("unknown table [", what(key.str()), "]");
            if (guess) {
                message += cat("; did you mean [", what(*guess), "]?");
            }
            m_diags->error(pos_of(node), std::move(message));
            continue;
        }
        std::string message = cat("unknown key ", quote(key.str()));
        if (!m_path.empty()) {
            message += cat(" in [", m_path, "]");
        }
        if (guess) {
            message += cat("; did you mean ", quote(*guess), "?");
        }
        m_diags->error(pos_of(key), std::move(message));
    }
}

}  // namespace pkit::config::detail
