#include "daemon/shell/http/response.hpp"

namespace pkit::shell::http {

std::string_view reason_phrase(int status) {
    switch (status) {
        case 200:
            return "OK";
        case 400:
            return "Bad Request";
        case 404:
            return "Not Found";
        case 405:
            return "Method Not Allowed";
        case 413:
            return "Content Too Large";
        case 431:
            return "Request Header Fields Too Large";
        case 500:
            return "Internal Server Error";
        case 503:
            return "Service Unavailable";
        default:
            return "Unknown";
    }
}

std::string serialize(const Response& response, bool keep_alive, bool head_only,
                      int request_minor_version) {
    std::string out;
    out.reserve(160 + (head_only ? 0 : response.body.size()));
    out += "HTTP/1.1 ";
    out += std::to_string(response.status);
    out += ' ';
    out += reason_phrase(response.status);
    out += "\r\nContent-Type: ";
    out += response.content_type;
    out += "\r\nContent-Length: ";
    out += std::to_string(response.body.size());
    if (response.status == 405) {
        out += "\r\nAllow: GET, HEAD";
    }
    out += "\r\nCache-Control: no-store";
    if (!keep_alive) {
        out += "\r\nConnection: close";
    } else if (request_minor_version == 0) {
        out += "\r\nConnection: keep-alive";
    }
    out += "\r\n\r\n";
    if (!head_only) {
        out += response.body;
    }
    return out;
}

}  // namespace pkit::shell::http
