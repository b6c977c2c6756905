#pragma once
// The Prometheus text exposition (format 0.0.4) of SPEC §11: names, types and labels
// are part of the contract. Rendered on request from the core's records, so counters
// reset exactly when the status counters do (a reload or `start` making them fresh).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/readiness.hpp"
#include "daemon/core/supervisor.hpp"
#include "proto/status.hpp"

namespace pkit::shell::http {

inline constexpr std::string_view k_metrics_content_type = "text/plain; version=0.0.4";

// What the metrics are made of, besides the services.
struct MetricsInput {
    const core::Supervisor* supervisor = nullptr;
    std::string version;
    double start_time = 0;  // pkitd's start, unix seconds
    bool ready = false;
    std::uint64_t orphans_reaped = 0;
    // The resources of each service in start order (start_order()'s positions);
    // empty entries (processes 0) for services without a run.
    std::vector<proto::Resources> resources;
};

std::string render_metrics(const MetricsInput& input);

// A label value escaped for the exposition format: \ " and newline.
std::string escape_label(std::string_view value);

}  // namespace pkit::shell::http
