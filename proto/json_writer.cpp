#include "proto/json_writer.hpp"

#include <charconv>

namespace pkit::proto {

namespace {

// Text nlohmann would write unchanged between quotes: printable ASCII but '"' and '\'.
bool plain(std::string_view text) {
    for (char c : text) {
        if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') {
            return false;
        }
    }
    return true;
}

}  // namespace

void JsonWriter::separate() {
    if (m_after_key) {
        m_after_key = false;
        return;
    }
    if (!m_first.empty()) {
        if (!m_first.back()) {
            m_out.push_back(',');
        }
        m_first.back() = false;
    }
}

void JsonWriter::begin_object() {
    separate();
    m_out.push_back('{');
    m_first.push_back(true);
}

void JsonWriter::end_object() {
    m_out.push_back('}');
    m_first.pop_back();
}

void JsonWriter::begin_array() {
    separate();
    m_out.push_back('[');
    m_first.push_back(true);
}

void JsonWriter::end_array() {
    m_out.push_back(']');
    m_first.pop_back();
}

void JsonWriter::key(std::string_view name) {
    value(name);
    m_out.push_back(':');
    m_after_key = true;
}

void JsonWriter::value(std::string_view text) {
    separate();
    if (plain(text)) {
        m_out.push_back('"');
        m_out.append(text);
        m_out.push_back('"');
        return;
    }
    // Escapes and invalid UTF-8: exactly as nlohmann does them.
    m_out.append(json(text).dump(-1, ' ', false, json::error_handler_t::replace));
}

void JsonWriter::value(std::int64_t number) {
    separate();
    char buffer[24];
    auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, number);
    m_out.append(buffer, end);
}

void JsonWriter::value(std::uint64_t number) {
    separate();
    char buffer[24];
    auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, number);
    m_out.append(buffer, end);
}

void JsonWriter::value(double number) {
    separate();
    // nlohmann's own float format (shortest round trip, ".0" for integral values, null
    // for NaN and infinities); short enough that the string rarely allocates.
    m_out.append(json(number).dump());
}

void JsonWriter::value(bool flag) {
    separate();
    m_out.append(flag ? "true" : "false");
}

void JsonWriter::null() {
    separate();
    m_out.append("null");
}

void JsonWriter::value(const json& any) {
    separate();
    m_out.append(any.dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace pkit::proto
