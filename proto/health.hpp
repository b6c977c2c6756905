#pragma once
// The result of `health` (SPEC §9, §11): pkitd's own liveness and readiness, with
// every service that keeps it from being ready. The same JSON is the body of the
// HTTP endpoint's /readyz.

#include <string>
#include <vector>

#include "proto/fwd.hpp"

namespace pkit::proto {

struct NotReadyInfo {
    std::string name;
    std::string state;
    std::string reason;  // "backoff: restart 3 in 1.6 s", "failed: restarts_exhausted", ...
    bool operator==(const NotReadyInfo&) const = default;
};

struct HealthResult {
    bool live = true;  // always true in a reply: an unlive pkitd does not answer
    bool ready = false;
    std::vector<NotReadyInfo> not_ready;
    bool operator==(const HealthResult&) const = default;
};

void to_json(json& out, const NotReadyInfo& value);
void from_json(const json& in, NotReadyInfo& value);
void to_json(json& out, const HealthResult& value);
void from_json(const json& in, HealthResult& value);

}  // namespace pkit::proto
