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

// Whether route() answers `request` with a small reply fixed in advance (/healthz,
// /livez, 404, 405): everything but a GET or HEAD of /readyz and /metrics, whose
// bodies are computed (and, for /metrics, a megabyte). A connection without a seat
// gets these at once (connection.hpp).
bool answers_unseated(const Request& request);

}  // namespace pkit::shell::http
