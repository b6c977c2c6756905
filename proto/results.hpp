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
// A start_first replacement the reload began (SPEC §21): `ok` true once the new run
// was ready, false when it failed (`reason`: why; the old run keeps serving), null
// when the reply did not wait (`no_block`).
struct ReplacementResult {
    std::string service;
    std::optional<bool> ok;
    std::optional<std::string> reason;
    bool operator==(const ReplacementResult&) const = default;
};

struct ReloadResult {
    std::vector<std::string> added;
    std::vector<std::string> removed;
    std::vector<std::string> changed;
    int unchanged = 0;
    std::vector<ReplacementResult> replacements;
    // The load's warnings, each "FILE:LINE:COL: warning: ..." (SPEC §21).
    std::vector<std::string> warnings;
    bool operator==(const ReloadResult&) const = default;
};

// One key of a changed service in `reload_preview` (SPEC §21): its old and new
// values as a file writes them, cut short past 80 bytes; null where not set.
struct KeyChangeResult {
    std::string key;
    std::optional<std::string> old_value;  // "old"
    std::optional<std::string> new_value;  // "new"
    bool operator==(const KeyChangeResult&) const = default;
};

struct ChangedServiceResult {
    std::string service;
    // What the reload would do to it: "restart", "start_first", "start", "stop",
    // "rearm" or "replace" (pkitctl(1) says what each means).
    std::string effect;
    bool restart = false;  // its run would be replaced (restart or start_first)
    std::vector<KeyChangeResult> keys;
    bool operator==(const ChangedServiceResult&) const = default;
};

// The result of `reload_preview`: what a reload would do now; nothing changed.
struct ReloadPreviewResult {
    std::vector<std::string> added;
    std::vector<std::string> removed;
    std::vector<ChangedServiceResult> changed;
    int unchanged = 0;
    std::vector<std::string> warnings;
    bool operator==(const ReloadPreviewResult&) const = default;
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
void to_json(json& out, const ReplacementResult& value);
void from_json(const json& in, ReplacementResult& value);
void to_json(json& out, const ReloadResult& value);
void from_json(const json& in, ReloadResult& value);
void to_json(json& out, const KeyChangeResult& value);
void from_json(const json& in, KeyChangeResult& value);
void to_json(json& out, const ChangedServiceResult& value);
void from_json(const json& in, ChangedServiceResult& value);
// Written with "dry_run": true, so that a reader tells it from a reload's result.
void to_json(json& out, const ReloadPreviewResult& value);
void from_json(const json& in, ReloadPreviewResult& value);
void to_json(json& out, const ExplainResult& value);
void from_json(const json& in, ExplainResult& value);

// An event object `{"type", "service", "group", "at"}`; the caller adds the type's own
// fields (`pid` and `run` for started, `code`/`signal`/`duration` for exited, ...).
// `service` is null for group_failed and daemon-wide events such as reload.
json make_event(std::string_view type, std::optional<std::string> service,
                std::optional<std::string> group, double at);

}  // namespace pkit::proto
