#pragma once
// Which answer a request gets (SPEC §11): GET and HEAD only; /healthz and /livez,
// /readyz, /metrics; everything else 404. Pure: what is served comes in as functions,
// called only for the path that needs them.

#include <functional>
#include <string>

#include "daemon/shell/http/metrics.hpp"
#include "daemon/shell/http/request_parser.hpp"
#include "daemon/shell/http/response.hpp"

namespace pkit::shell::http {

struct Sources {
    // pkitd's readiness and the `health` result as JSON (the /readyz body).
    std::function<std::pair<bool, std::string>()> readiness;
    // What the Prometheus exposition shows, taken now (MetricsCache renders it).
    std::function<MetricsSnapshot()> metrics;
};

// The answer to `request`; for /metrics, a response marked `metrics` whose body the
// connection takes from the MetricsCache.
Response route(const Request& request, const Sources& sources);

}  // namespace pkit::shell::http
