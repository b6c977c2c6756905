#pragma once
// A SAX handler that writes every call it gets as a line of text, so that two JSON
// readers can be compared call by call: scan_json against nlohmann's sax_parse in
// tests/unit/proto/test_json_scan.cpp and in the fuzz target status_reply. It says
// stop (returns false) at call number `stop_at` when given.

#include <cstdio>
#include <string>

#include "proto/json_scan.hpp"

namespace pkit::proto::test {

class JsonRecorder : public JsonSax {
public:
    explicit JsonRecorder(int stop_at = -1) : m_stop_at(stop_at) {}

    bool null() override { return record("null"); }
    bool boolean(bool value) override { return record(value ? "true" : "false"); }
    bool number_integer(number_integer_t value) override {
        return record("int " + std::to_string(value));
    }
    bool number_unsigned(number_unsigned_t value) override {
        return record("unsigned " + std::to_string(value));
    }
    bool number_float(number_float_t value, const string_t& text) override {
        char shown[64];
        std::snprintf(shown, sizeof shown, "%.17g", value);
        return record("float " + std::string(shown) + " from " + text);
    }
    bool string(string_t& value) override { return record("string " + value); }
    bool binary(binary_t&) override { return record("binary"); }
    bool start_object(std::size_t) override { return record("{"); }
    bool key(string_t& value) override { return record("key " + value); }
    bool end_object() override { return record("}"); }
    bool start_array(std::size_t) override { return record("["); }
    bool end_array() override { return record("]"); }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
        calls += "error\n";  // where and why may be worded differently
        return false;
    }

    std::string calls;

private:
    bool record(const std::string& call) {
        calls += call + "\n";
        return ++m_count != m_stop_at;
    }

    int m_stop_at;
    int m_count = 0;
};

}  // namespace pkit::proto::test
