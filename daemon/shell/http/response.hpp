#pragma once
// HTTP responses of the endpoint (SPEC §11), as bytes ready to write. Pure.

#include <cstddef>
#include <ctime>
#include <string>
#include <string_view>

#include "daemon/shell/http/request_parser.hpp"

namespace pkit::shell::http {

struct Response {
    int status = 200;
    std::string content_type = "text/plain; charset=utf-8";
    std::string body;
    bool close = false;  // the connection closes once this is written
    // The body is the /metrics exposition, which the connection gets from the
    // server's MetricsCache (shared between scrapers) instead of `body`.
    bool metrics = false;
    // The Date header's value (http_date()); every reply of the endpoint has one.
    std::string date;
};

// `unix_seconds` as HTTP's Date wants it (RFC 9110 IMF-fixdate):
// "Sun, 06 Nov 1994 08:49:37 GMT". In English whatever the locale.
std::string http_date(long long unix_seconds);

// The reason phrase of the statuses the endpoint uses ("OK", "Not Found", ...).
std::string_view reason_phrase(int status);

// The response's bytes: status line, Date (when set), Content-Type, Content-Length,
// Connection and,
// unless `head_only`, the body. `keep_alive` is what the connection does next; for an
// HTTP/1.0 request it is said explicitly (Connection: keep-alive).
std::string serialize(const Response& response, bool keep_alive, bool head_only,
                      int request_minor_version);
// The status line and headers alone, for a body of `body_size` bytes sent apart.
std::string serialize_head(const Response& response, std::size_t body_size, bool keep_alive,
                           int request_minor_version);

}  // namespace pkit::shell::http
