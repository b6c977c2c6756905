#include "daemon/shell/http/response.hpp"

#include <array>
#include <cstdio>

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

std::string http_date(long long unix_seconds) {
    static constexpr std::array<std::string_view, 7> k_days{"Sun", "Mon", "Tue", "Wed",
                                                            "Thu", "Fri", "Sat"};
    static constexpr std::array<std::string_view, 12> k_months{
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    const auto seconds = static_cast<std::time_t>(unix_seconds);
    std::tm utc{};
    ::gmtime_r(&seconds, &utc);
    char text[40];
    std::snprintf(text, sizeof text, "%s, %02d %s %04d %02d:%02d:%02d GMT",
                  k_days[static_cast<std::size_t>(utc.tm_wday) % 7].data(), utc.tm_mday,
                  k_months[static_cast<std::size_t>(utc.tm_mon) % 12].data(), utc.tm_year + 1900,
                  utc.tm_hour, utc.tm_min, utc.tm_sec);
    return text;
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
    if (!response.date.empty()) {
        out += "\r\nDate: ";
        out += response.date;
    }
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
