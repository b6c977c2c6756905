// toml_too_deep(): one pass over a TOML text with a small state machine that knows just
// enough TOML to count levels: where a line starts a table header or a key, where a key
// ends and its value begins, the arrays and inline tables a value opens, and the
// strings and comments in which none of these characters count.

#include "config/toml_depth.hpp"

#include <vector>

namespace pkit::config::detail {
namespace {

class DepthScan {
public:
    explicit DepthScan(std::string_view text) : m_text(text) {}

    // The offset of the first byte that goes past k_max_toml_depth, or npos.
    std::size_t run() {
        while (m_at < m_text.size()) {
            const char c = m_text[m_at];
            if (c == '#') {
                skip_comment();
                continue;
            }
            if (c == '"' || c == '\'') {
                if (m_state == State::line_start) {
                    start_key(m_table_base);
                }
                if ((m_state == State::key || m_state == State::header) && !part()) {
                    return m_at;
                }
                skip_string(c);
                continue;
            }
            if (!step(c)) {
                return m_at;
            }
        }
        return std::string_view::npos;
    }

private:
    enum class State {
        line_start,   // at the top level, where a header or a key may start
        header,       // in the name of a [table] or [[array of tables]]
        header_rest,  // after a header's closing "]", up to the end of its line
        key,          // in a key, up to its "="
        value,        // in a value and what follows it
    };
    // An array or an inline table the scan is in.
    struct Frame {
        bool array = false;
        int base = 0;  // the level of its elements (array) or of its table (inline table)
    };

    // Handles the character at m_at (not a quote nor "#"); false when it goes too deep.
    bool step(char c) {
        switch (m_state) {
            case State::line_start:
                if (c == '[') {
                    m_aot = m_text.substr(m_at, 2) == "[[";
                    m_at += m_aot ? 2 : 1;
                    m_state = State::header;
                    m_parts = 0;
                    m_part_due = true;
                    return true;
                }
                if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
                    ++m_at;
                    return true;
                }
                start_key(m_table_base);
                return true;
            case State::header:
                if (c == ']' || c == '\n') {
                    m_table_base = m_parts + (m_aot ? 1 : 0);
                    m_state = c == ']' ? State::header_rest : State::line_start;
                } else if (c == '.') {
                    m_part_due = true;
                } else if (c != ' ' && c != '\t' && !part()) {
                    return false;
                }
                ++m_at;
                return true;
            case State::header_rest:
                if (c == '\n') {
                    m_state = State::line_start;
                }
                ++m_at;
                return true;
            case State::key:
                return key_step(c);
            case State::value:
                return value_step(c);
        }
        return true;
    }

    bool key_step(char c) {
        if (c == '=') {
            m_state = State::value;
            m_level = m_base + m_parts;
        } else if (c == '.') {
            m_part_due = true;
        } else if (c == '}' || c == ',') {
            close_or_next(c);  // "{}", or a key without a value (an error toml++ reports)
            return true;
        } else if (c == '\n') {
            if (m_frames.empty()) {
                m_state = State::line_start;
            }
        } else if (c != ' ' && c != '\t' && c != '\r' && c != '[' && c != ']' && c != '{' &&
                   !part()) {
            return false;
        }
        ++m_at;
        return true;
    }

    bool value_step(char c) {
        if (c == '[') {
            if (m_level + 1 > k_max_toml_depth) {
                return false;
            }
            m_frames.push_back({true, m_level + 1});
            ++m_level;
        } else if (c == '{') {
            m_frames.push_back({false, m_level});
            start_key(m_level);
        } else if (c == ']' || c == '}' || c == ',') {
            close_or_next(c);
            return true;
        } else if (c == '\n' && m_frames.empty()) {
            m_state = State::line_start;
        }
        ++m_at;
        return true;
    }

    // "]" or "}" closing the innermost array or inline table, or "," moving on to its
    // next element or key. Anything else (an error toml++ reports) is passed over.
    void close_or_next(char c) {
        ++m_at;
        if (m_frames.empty()) {
            return;
        }
        const Frame top = m_frames.back();
        if (c == ',') {
            if (top.array) {
                m_state = State::value;
                m_level = top.base;
            } else {
                start_key(top.base);
            }
        } else if ((c == ']') == top.array) {
            m_frames.pop_back();
            m_state = State::value;  // what follows the array or table, a value of its own
        }
    }

    void start_key(int base) {
        m_state = State::key;
        m_base = base;
        m_parts = 0;
        m_part_due = true;
    }

    // A character of a key's or a header's name: a new part after a "." (or at the
    // start); false when that part is one level too many.
    bool part() {
        if (!m_part_due) {
            return true;
        }
        m_part_due = false;
        ++m_parts;
        const int base = m_state == State::header ? (m_aot ? 1 : 0) : m_base;
        return base + m_parts <= k_max_toml_depth;
    }

    void skip_comment() {
        while (m_at < m_text.size() && m_text[m_at] != '\n') {
            ++m_at;
        }
    }

    // The string whose opening quote `q` is at m_at: basic ("), literal ('), or their
    // multi-line forms, which may end with up to two more quotes than their three.
    void skip_string(char q) {
        const std::string_view triple = q == '"' ? "\"\"\"" : "'''";
        if (m_text.substr(m_at, 3) == triple) {
            m_at += 3;
            while (m_at < m_text.size()) {
                if (q == '"' && m_text[m_at] == '\\') {
                    m_at += 2;
                } else if (m_text.substr(m_at, 3) == triple) {
                    std::size_t run = 3;
                    while (run < 5 && m_at + run < m_text.size() && m_text[m_at + run] == q) {
                        ++run;
                    }
                    m_at += run;
                    return;
                } else {
                    ++m_at;
                }
            }
            return;
        }
        ++m_at;
        // One line at most: a newline ends it (an error toml++ reports), and counts.
        while (m_at < m_text.size() && m_text[m_at] != '\n') {
            if (q == '"' && m_text[m_at] == '\\') {
                m_at += 2;
                continue;
            }
            if (m_text[m_at++] == q) {
                return;
            }
        }
    }

    std::string_view m_text;
    std::size_t m_at = 0;
    State m_state = State::line_start;
    std::vector<Frame> m_frames;
    int m_table_base = 0;  // the level of the latest header's table: its parts
    bool m_aot = false;    // the header being read is [[...]]
    int m_base = 0;        // in a key: the level of the table it is in
    int m_parts = 0;       // in a key or a header: its parts so far
    bool m_part_due = true;
    int m_level = 0;  // in a value: its level
};

}  // namespace

std::optional<TomlTooDeep> toml_too_deep(std::string_view text) {
    const std::size_t at = DepthScan(text).run();
    if (at == std::string_view::npos) {
        return std::nullopt;
    }
    TomlTooDeep where;
    // toml++ does not count a byte order mark; it counts a character a column.
    std::size_t from = text.starts_with("\xEF\xBB\xBF") ? 3 : 0;
    for (std::size_t i = from; i < at; ++i) {
        const auto byte = static_cast<unsigned char>(text[i]);
        if (byte == '\n') {
            ++where.line;
            where.column = 1;
        } else if ((byte & 0xC0) != 0x80) {
            ++where.column;
        }
    }
    return where;
}

}  // namespace pkit::config::detail
