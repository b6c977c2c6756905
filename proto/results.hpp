#pragma once
// The other results and stream objects of SPEC §9: log lines, reload, explain, and
// events. Same conventions as status.hpp: optional fields are written as null.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/codes.hpp"

namespace pkit::proto {

// One captured output line, in a `logs` result or a followed `line` stream object.
struct LogLine {
    std::string stream;  // "stdout" or "stderr"
    std::string text;    // without its newline; may hold invalid UTF-8 (replaced on output)
    double at = 0;       // unix seconds when pkitd read it
    bool operator==(const LogLine&) const = default;
};

// The result of `logs`. With `previous` and no such run, `lines` is empty and `run` null.
struct LogsResult {
    std::vector<LogLine> lines;
    bool truncated = false;  // older lines of that run were dropped
    std::optional<int> run;
    // The service's state at the reply, so `logs --follow` of a service that will not
    // run again (done, failed, stopped) can end at once.
    std::optional<std::string> state;
    bool operator==(const LogsResult&) const = default;
};

// The result of `reload`.
struct ReloadResult {
    std::vector<std::string> added;
    std::vector<std::string> removed;
    std::vector<std::string> changed;
    int unchanged = 0;
    bool operator==(const ReloadResult&) const = default;
};

// The result of `explain`: plain sentences plus the facts they were made from.
struct ExplainResult {
    std::string text;
    json facts = json::object();
    bool operator==(const ExplainResult&) const = default;
};

void to_json(json& out, const LogLine& value);
void from_json(const json& in, LogLine& value);
void to_json(json& out, const LogsResult& value);
void from_json(const json& in, LogsResult& value);
void to_json(json& out, const ReloadResult& value);
void from_json(const json& in, ReloadResult& value);
void to_json(json& out, const ExplainResult& value);
void from_json(const json& in, ExplainResult& value);

// An event object `{"type", "service", "group", "at"}`; the caller adds the type's own
// fields (`pid` and `run` for started, `code`/`signal`/`duration` for exited, ...).
// `service` is null for group_failed and daemon-wide events such as reload.
json make_event(std::string_view type, std::optional<std::string> service,
                std::optional<std::string> group, double at);

}  // namespace pkit::proto
