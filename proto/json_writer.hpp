#pragma once
// Writes compact JSON straight into one string, for replies too large to be worth a
// DOM (the `status` of a thousand services is ~300 KB: building an nlohmann tree of a
// std::map per service and then copying it costs more than the writing). The output is
// what nlohmann's dump() gives for the same values (keys are written in the order the
// caller gives, so callers give them sorted, as nlohmann's objects are), and text that
// is not valid UTF-8 is replaced with U+FFFD, never thrown on.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/codes.hpp"

namespace pkit::proto {

class JsonWriter {
public:
    // Appends to `out`, which the caller may have reserved.
    explicit JsonWriter(std::string& out) : m_out(out) {}

    void begin_object();
    void end_object();
    void begin_array();
    void end_array();
    // The key of the next member; inside an object only.
    void key(std::string_view name);

    void value(std::string_view text);
    void value(const std::string& text) { value(std::string_view(text)); }
    void value(const char* text) { value(std::string_view(text)); }
    void value(std::int64_t number);
    void value(int number) { value(static_cast<std::int64_t>(number)); }
    void value(std::uint64_t number);
    void value(double number);
    void value(bool flag);
    void null();
    // Any nlohmann value, e.g. a request's id.
    void value(const json& any);
    template <typename T>
    void value(const std::optional<T>& maybe) {
        if (maybe) {
            value(*maybe);
        } else {
            null();
        }
    }

    // Bytes written so far.
    std::size_t size() const { return m_out.size(); }
    // Room for `more` bytes beyond what is written, in one allocation.
    void reserve(std::size_t more) { m_out.reserve(m_out.size() + more); }

private:
    // Writes the ',' between members or elements.
    void separate();

    std::string& m_out;
    // Per open container: whether it has no member yet.
    std::vector<bool> m_first;
    bool m_after_key = false;
};

}  // namespace pkit::proto
