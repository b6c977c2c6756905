#pragma once
// Optional fields on the wire: nullopt is written as JSON null (never omitted), and a
// missing key or null reads back as nullopt. Internal to pkitproto's serializers.

#include <optional>

#include <nlohmann/json.hpp>

namespace pkit::proto::detail {

template <typename T>
nlohmann::json optional_to_json(const std::optional<T>& value) {
    return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

template <typename T>
void optional_from_json(const nlohmann::json& in, const char* key, std::optional<T>& out) {
    auto it = in.find(key);
    if (it == in.end() || it->is_null()) {
        out.reset();
    } else {
        out = it->template get<T>();
    }
}

// A field that may be absent in replies from an older pkitd: keeps the default then.
template <typename T>
void field_from_json(const nlohmann::json& in, const char* key, T& out) {
    if (auto it = in.find(key); it != in.end() && !it->is_null()) {
        it->get_to(out);
    }
}

}  // namespace pkit::proto::detail
