#include "proto/health.hpp"

#include "proto/optional_json.hpp"

namespace pkit::proto {

using detail::field_from_json;

void to_json(json& out, const NotReadyInfo& value) {
    out = json{{"name", value.name}, {"state", value.state}, {"reason", value.reason}};
}

void from_json(const json& in, NotReadyInfo& value) {
    in.at("name").get_to(value.name);
    field_from_json(in, "state", value.state);
    field_from_json(in, "reason", value.reason);
}

void to_json(json& out, const HealthResult& value) {
    out = json{{"live", value.live}, {"ready", value.ready}, {"not_ready", value.not_ready}};
}

void from_json(const json& in, HealthResult& value) {
    field_from_json(in, "live", value.live);
    in.at("ready").get_to(value.ready);
    field_from_json(in, "not_ready", value.not_ready);
}

}  // namespace pkit::proto
