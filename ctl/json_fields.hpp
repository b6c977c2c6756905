#pragma once
// Reading the optional members of a protocol object (an event, a status, explain's
// facts) for display: absent, null and wrongly typed members all read as "nothing".

#include <optional>
#include <string>
#include <string_view>

#include "proto/protocol.hpp"

namespace pkit::ctl {

// The member `key` when it is a string, else "".
inline std::string text_of(const proto::json& object, std::string_view key) {
    auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The member `key` when it is a number.
inline std::optional<double> number_of(const proto::json& object, std::string_view key) {
    auto it = object.find(key);
    return it != object.end() && it->is_number() ? std::optional(it->get<double>()) : std::nullopt;
}

// A count or an id the protocol sends as a JSON number, without a decimal point.
inline std::string integer_text(double value) {
    return std::to_string(static_cast<long long>(value));
}

}  // namespace pkit::ctl
