#include "daemon/shell/http/router.hpp"

#include "daemon/shell/http/metrics.hpp"

namespace pkit::shell::http {

Response route(const Request& request, const Sources& sources) {
    Response response;
    if (request.method != "GET" && request.method != "HEAD") {
        response.status = 405;
        response.body = "method not allowed: GET and HEAD only\n";
        return response;
    }
    if (request.path == "/healthz" || request.path == "/livez") {
        response.body = "ok\n";
        return response;
    }
    if (request.path == "/readyz") {
        auto [ready, json] = sources.readiness();
        response.status = ready ? 200 : 503;
        response.content_type = "application/json";
        response.body = std::move(json);
        response.body += '\n';
        return response;
    }
    if (request.path == "/metrics") {
        response.content_type = std::string(k_metrics_content_type);
        response.metrics = true;
        return response;
    }
    response.status = 404;
    response.body = "not found: /healthz, /livez, /readyz and /metrics are served\n";
    return response;
}

bool answers_unseated(const Request& request) {
    const bool read = request.method == "GET" || request.method == "HEAD";
    return !read || (request.path != "/readyz" && request.path != "/metrics");
}

}  // namespace pkit::shell::http
