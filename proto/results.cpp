#include "proto/results.hpp"

#include "proto/optional_json.hpp"

namespace pkit::proto {

using detail::field_from_json;
using detail::optional_from_json;
using detail::optional_to_json;

void to_json(json& out, const LogLine& value) {
    out = json{{"stream", value.stream}, {"text", value.text}, {"at", value.at}};
}

void from_json(const json& in, LogLine& value) {
    field_from_json(in, "stream", value.stream);
    in.at("text").get_to(value.text);
    field_from_json(in, "at", value.at);
}

void to_json(json& out, const LogsResult& value) {
    out = json{{"lines", value.lines},
               {"truncated", value.truncated},
               {"run", optional_to_json(value.run)},
               {"state", optional_to_json(value.state)}};
}

void from_json(const json& in, LogsResult& value) {
    in.at("lines").get_to(value.lines);
    field_from_json(in, "truncated", value.truncated);
    optional_from_json(in, "run", value.run);
    optional_from_json(in, "state", value.state);
}

void to_json(json& out, const ReplacementResult& value) {
    out = json{{"service", value.service},
               {"ok", optional_to_json(value.ok)},
               {"reason", optional_to_json(value.reason)}};
}

void from_json(const json& in, ReplacementResult& value) {
    field_from_json(in, "service", value.service);
    optional_from_json(in, "ok", value.ok);
    optional_from_json(in, "reason", value.reason);
}

void to_json(json& out, const ReloadResult& value) {
    out = json{{"added", value.added},
               {"removed", value.removed},
               {"changed", value.changed},
               {"unchanged", value.unchanged},
               {"replacements", value.replacements},
               {"warnings", value.warnings}};
}

void from_json(const json& in, ReloadResult& value) {
    field_from_json(in, "added", value.added);
    field_from_json(in, "removed", value.removed);
    field_from_json(in, "changed", value.changed);
    field_from_json(in, "unchanged", value.unchanged);
    field_from_json(in, "replacements", value.replacements);
    field_from_json(in, "warnings", value.warnings);
}

void to_json(json& out, const KeyChangeResult& value) {
    out = json{{"key", value.key},
               {"old", optional_to_json(value.old_value)},
               {"new", optional_to_json(value.new_value)}};
}

void from_json(const json& in, KeyChangeResult& value) {
    field_from_json(in, "key", value.key);
    optional_from_json(in, "old", value.old_value);
    optional_from_json(in, "new", value.new_value);
}

void to_json(json& out, const ChangedServiceResult& value) {
    out = json{{"service", value.service},
               {"effect", value.effect},
               {"restart", value.restart},
               {"keys", value.keys}};
}

void from_json(const json& in, ChangedServiceResult& value) {
    field_from_json(in, "service", value.service);
    field_from_json(in, "effect", value.effect);
    field_from_json(in, "restart", value.restart);
    field_from_json(in, "keys", value.keys);
}

void to_json(json& out, const ReloadPreviewResult& value) {
    out = json{
        {"dry_run", true},          {"added", value.added},         {"removed", value.removed},
        {"changed", value.changed}, {"unchanged", value.unchanged}, {"warnings", value.warnings}};
}

void from_json(const json& in, ReloadPreviewResult& value) {
    field_from_json(in, "added", value.added);
    field_from_json(in, "removed", value.removed);
    field_from_json(in, "changed", value.changed);
    field_from_json(in, "unchanged", value.unchanged);
    field_from_json(in, "warnings", value.warnings);
}

void to_json(json& out, const ExplainResult& value) {
    out = json{{"text", value.text}, {"facts", value.facts}};
}

void from_json(const json& in, ExplainResult& value) {
    in.at("text").get_to(value.text);
    field_from_json(in, "facts", value.facts);
}

json make_event(std::string_view type, std::optional<std::string> service,
                std::optional<std::string> group, double at) {
    return json{{"type", type},
                {"service", optional_to_json(service)},
                {"group", optional_to_json(group)},
                {"at", at}};
}

}  // namespace pkit::proto
