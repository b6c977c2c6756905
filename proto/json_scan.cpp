#include "proto/json_scan.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace pkit::proto {
namespace {

using json = nlohmann::json;

// The length of the well-formed UTF-8 sequence at the start of `rest` (RFC 3629's
// table), or 0 when it is not one.
std::size_t utf8_length(std::string_view rest) {
    auto byte = [&](std::size_t i) { return static_cast<unsigned char>(rest[i]); };
    auto within = [&](std::size_t i, unsigned low, unsigned high) {
        return i < rest.size() && byte(i) >= low && byte(i) <= high;
    };
    const unsigned lead = byte(0);
    if (lead < 0x80) {
        return 1;
    }
    if (lead >= 0xC2 && lead <= 0xDF) {
        return within(1, 0x80, 0xBF) ? 2 : 0;
    }
    if (lead >= 0xE0 && lead <= 0xEF) {
        const unsigned low = lead == 0xE0 ? 0xA0 : 0x80;
        const unsigned high = lead == 0xED ? 0x9F : 0xBF;
        return within(1, low, high) && within(2, 0x80, 0xBF) ? 3 : 0;
    }
    if (lead >= 0xF0 && lead <= 0xF4) {
        const unsigned low = lead == 0xF0 ? 0x90 : 0x80;
        const unsigned high = lead == 0xF4 ? 0x8F : 0xBF;
        return within(1, low, high) && within(2, 0x80, 0xBF) && within(3, 0x80, 0xBF) ? 4 : 0;
    }
    return 0;
}

void append_utf8(std::string& out, std::uint32_t code) {
    if (code < 0x80) {
        out += static_cast<char>(code);
    } else if (code < 0x800) {
        out += static_cast<char>(0xC0 | (code >> 6));
        out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
        out += static_cast<char>(0xE0 | (code >> 12));
        out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (code >> 18));
        out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (code & 0x3F));
    }
}

class Scanner {
public:
    Scanner(std::string_view text, JsonSax& handler) : m_text(text), m_handler(handler) {}

    bool run() {
        if (m_text.starts_with("\xEF\xBB\xBF")) {
            m_at = 3;
        }
        // The containers the scanner is in, innermost last: true for an object.
        std::vector<bool> open;
        for (;;) {
            // A value is due.
            skip_space();
            if (const char c = peek(); c == '{' || c == '[') {
                const bool object = c == '{';
                ++m_at;
                constexpr auto k_unknown_size = static_cast<std::size_t>(-1);
                if (!(object ? m_handler.start_object(k_unknown_size)
                             : m_handler.start_array(k_unknown_size))) {
                    return false;
                }
                skip_space();
                if (peek() != (object ? '}' : ']')) {
                    if (object && !member_key()) {
                        return false;
                    }
                    open.push_back(object);
                    continue;
                }
                ++m_at;
                if (!close(object)) {
                    return false;
                }
            } else if (!scalar()) {
                return false;
            }
            // A value ended: what follows it closes containers, or a next value is due.
            for (;;) {
                skip_space();
                if (open.empty()) {
                    // sax_parse takes a NUL byte outside a string for the end.
                    return m_at == m_text.size() || m_text[m_at] == '\0' ||
                           error("end of input expected");
                }
                const char c = peek();
                ++m_at;
                if (c == ',') {
                    if (open.back() && !member_key()) {
                        return false;
                    }
                    break;
                }
                if (c == (open.back() ? '}' : ']')) {
                    const bool object = open.back();
                    open.pop_back();
                    if (!close(object)) {
                        return false;
                    }
                    continue;
                }
                --m_at;
                return error(open.back() ? "',' or '}' expected" : "',' or ']' expected");
            }
        }
    }

private:
    // The end of an object or an array, told to the handler.
    bool close(bool object) { return object ? m_handler.end_object() : m_handler.end_array(); }

    char peek() const { return m_at < m_text.size() ? m_text[m_at] : '\0'; }

    void skip_space() {
        while (m_at < m_text.size()) {
            const char c = m_text[m_at];
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                return;
            }
            ++m_at;
        }
    }

    bool error(const char* what) {
        const std::string message = std::string("syntax error: ") + what;
        auto exception = nlohmann::detail::parse_error::create(101, m_at, message, nullptr);
        m_handler.parse_error(m_at, std::string(m_text.substr(m_at, 1)), exception);
        return false;
    }

    // An object's member name and its colon (the value follows).
    bool member_key() {
        skip_space();
        if (peek() != '"') {
            return error("a member name (a string) expected");
        }
        ++m_at;
        if (!read_string() || !m_handler.key(m_string)) {
            return false;
        }
        skip_space();
        if (peek() != ':') {
            return error("':' expected");
        }
        ++m_at;
        return true;
    }

    bool scalar() {
        const char c = peek();
        if (c == '"') {
            ++m_at;
            return read_string() && m_handler.string(m_string);
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
            return read_number();
        }
        for (auto [word, call] : {std::pair{"true", 0}, {"false", 1}, {"null", 2}}) {
            const std::string_view literal(word);
            if (m_text.substr(m_at, literal.size()) == literal) {
                m_at += literal.size();
                return call == 2 ? m_handler.null() : m_handler.boolean(call == 0);
            }
        }
        return error("a value expected");
    }

    // The string after its opening quote, into m_string.
    bool read_string() {
        m_string.clear();
        std::size_t run = m_at;  // start of the bytes not yet copied
        while (m_at < m_text.size()) {
            const auto c = static_cast<unsigned char>(m_text[m_at]);
            if (c == '"') {
                m_string.append(m_text.substr(run, m_at - run));
                ++m_at;
                return true;
            }
            if (c < 0x20) {
                return error("a control character in a string must be escaped");
            }
            if (c == '\\') {
                m_string.append(m_text.substr(run, m_at - run));
                if (!read_escape()) {
                    return false;
                }
                run = m_at;
                continue;
            }
            const std::size_t length = utf8_length(m_text.substr(m_at));
            if (length == 0) {
                return error("invalid UTF-8 in a string");
            }
            m_at += length;
        }
        return error("the string is not closed");
    }

    // The escape at m_at (its backslash), appended to m_string.
    bool read_escape() {
        ++m_at;
        const char c = peek();
        ++m_at;
        switch (c) {
            case '"':
                m_string += '"';
                return true;
            case '\\':
                m_string += '\\';
                return true;
            case '/':
                m_string += '/';
                return true;
            case 'b':
                m_string += '\b';
                return true;
            case 'f':
                m_string += '\f';
                return true;
            case 'n':
                m_string += '\n';
                return true;
            case 'r':
                m_string += '\r';
                return true;
            case 't':
                m_string += '\t';
                return true;
            case 'u':
                break;
            default:
                --m_at;
                return error("an invalid escape in a string");
        }
        std::uint32_t code = 0;
        if (!read_hex4(code)) {
            return false;
        }
        if (code >= 0xDC00 && code <= 0xDFFF) {
            return error("a low surrogate without a high one");
        }
        if (code >= 0xD800 && code <= 0xDBFF) {
            std::uint32_t low = 0;
            if (m_text.substr(m_at, 2) != "\\u") {
                return error("a high surrogate without a low one");
            }
            m_at += 2;
            if (!read_hex4(low)) {
                return false;
            }
            if (low < 0xDC00 || low > 0xDFFF) {
                return error("a high surrogate without a low one");
            }
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
        }
        append_utf8(m_string, code);
        return true;
    }

    bool read_hex4(std::uint32_t& code) {
        if (m_text.size() - m_at < 4) {
            return error("\\u wants four hex digits");
        }
        for (int i = 0; i < 4; ++i) {
            const char c = m_text[m_at++];
            const int digit = c >= '0' && c <= '9'   ? c - '0'
                              : c >= 'a' && c <= 'f' ? c - 'a' + 10
                              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                     : -1;
            if (digit < 0) {
                --m_at;
                return error("\\u wants four hex digits");
            }
            code = code * 16 + static_cast<std::uint32_t>(digit);
        }
        return true;
    }

    // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
    bool read_number() {
        const std::size_t start = m_at;
        auto digits = [&] {
            const std::size_t from = m_at;
            while (m_at < m_text.size() && m_text[m_at] >= '0' && m_text[m_at] <= '9') {
                ++m_at;
            }
            return m_at > from;
        };
        const bool negative = peek() == '-';
        if (negative) {
            ++m_at;
        }
        if (peek() == '0') {
            ++m_at;
        } else if (!digits()) {
            return error("a digit expected");
        }
        bool integral = true;
        if (peek() == '.') {
            ++m_at;
            integral = false;
            if (!digits()) {
                return error("a digit expected after '.'");
            }
        }
        if (peek() == 'e' || peek() == 'E') {
            ++m_at;
            integral = false;
            if (peek() == '+' || peek() == '-') {
                ++m_at;
            }
            if (!digits()) {
                return error("a digit expected in the exponent");
            }
        }
        const char* first = m_text.data() + start;
        const char* last = m_text.data() + m_at;
        if (integral) {
            if (negative) {
                std::int64_t value = 0;
                if (std::from_chars(first, last, value).ec == std::errc{}) {
                    return m_handler.number_integer(value);
                }
            } else {
                std::uint64_t value = 0;
                if (std::from_chars(first, last, value).ec == std::errc{}) {
                    return m_handler.number_unsigned(value);
                }
            }
        }
        m_token.assign(first, last);
        double value = 0;
        // from_chars does not depend on the locale; it refuses a number too small for a
        // double, which strtod (as sax_parse) reads as 0 or a denormal.
        if (std::from_chars(first, last, value).ec != std::errc{}) {
            value = std::strtod(m_token.c_str(), nullptr);
        }
        if (!std::isfinite(value)) {
            m_at = start;
            return error("a number too large for a double");
        }
        return m_handler.number_float(value, m_token);
    }

    std::string_view m_text;
    JsonSax& m_handler;
    std::size_t m_at = 0;
    std::string m_string;  // the latest string or member name
    std::string m_token;   // the latest floating-point number's text
};

}  // namespace

bool scan_json(std::string_view text, JsonSax& handler) {
    return Scanner(text, handler).run();
}

bool json_deeper_than(std::string_view text, int limit) {
    int depth = 0;
    bool in_string = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') {
                ++i;
            } else if (c == '"') {
                in_string = false;
            }
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > limit) {
                return true;
            }
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
    return false;
}

}  // namespace pkit::proto
