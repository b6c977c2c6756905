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
        case 505:
            return "HTTP Version Not Supported";
        default:
            return "Unknown";
    }
}

std::string serialize(const Response& response, bool keep_alive, bool head_only,
                      int request_minor_version) {
    std::string out =
        serialize_head(response, response.body.size(), keep_alive, request_minor_version);
    if (!head_only) {
        out += response.body;
    }
    return out;
}

std::string serialize_head(const Response& response, std::size_t body_size, bool keep_alive,
                           int request_minor_version) {
    std::string out;
    out.reserve(160);
    out += "HTTP/1.1 ";
    out += std::to_string(response.status);
    out += ' ';
    out += reason_phrase(response.status);
    out += "\r\nContent-Type: ";
    out += response.content_type;
    out += "\r\nContent-Length: ";
    out += std::to_string(body_size);
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
    return out;
}

}  // namespace pkit::shell::http
