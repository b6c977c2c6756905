#include "daemon/shell/http/request_parser.hpp"

#include <http_parser.h>

#include <algorithm>

namespace pkit::shell::http {

struct RequestParser::Impl {
    http_parser parser{};
    http_parser_settings settings{};
    std::string url;
    Request current;
    std::size_t head_bytes = 0;  // bytes of the current head read so far
    std::size_t body_bytes = 0;
    bool in_body = false;       // between the end of the head and the end of the message
    bool head_done = false;     // set by on_headers_complete, consumed by feed
    bool message_done = false;  // set by on_message_complete, consumed by feed
    bool started = false;       // a message has begun and not completed
    bool body_too_large = false;
    bool finished = false;       // an upgrade or CONNECT: nothing more is read
    bool space_in_name = false;  // whitespace before a header's colon
    std::optional<ParseError> error;
};

namespace {

RequestParser::Impl& impl_of(http_parser* p) {
    return *static_cast<RequestParser::Impl*>(p->data);
}

// The path of a request target: origin form "/p?q", absolute form "http://h/p", "*".
std::string path_of(const std::string& url) {
    if (!url.empty() && url.front() == '/') {
        return url.substr(0, url.find_first_of("?#"));
    }
    http_parser_url parts;
    http_parser_url_init(&parts);
    if (http_parser_parse_url(url.data(), url.size(), 0, &parts) == 0) {
        if ((parts.field_set & (1 << UF_PATH)) != 0) {
            return url.substr(parts.field_data[UF_PATH].off, parts.field_data[UF_PATH].len);
        }
        return "/";
    }
    return url;
}

int on_message_begin(http_parser* p) {
    auto& impl = impl_of(p);
    impl.started = true;
    impl.url.clear();
    impl.current = Request{};
    impl.body_bytes = 0;
    return 0;
}

int on_url(http_parser* p, const char* at, std::size_t length) {
    impl_of(p).url.append(at, length);
    return 0;
}

// http-parser (not built strict) takes a space before the colon as part of the name;
// RFC 9112 section 5.1 requires a 400 for it (a request smuggling vector).
int on_header_field(http_parser* p, const char* at, std::size_t length) {
    if (std::string_view(at, length).find_first_of(" \t") != std::string_view::npos) {
        impl_of(p).space_in_name = true;
        return 1;
    }
    return 0;
}

int on_headers_complete(http_parser* p) {
    auto& impl = impl_of(p);
    impl.current.method = http_method_str(static_cast<http_method>(p->method));
    impl.current.path = path_of(impl.url);
    impl.current.version_major = p->http_major;
    impl.current.version_minor = p->http_minor;
    impl.current.keep_alive = http_should_keep_alive(p) != 0;
    impl.head_done = true;
    http_parser_pause(p, 1);
    return 0;
}

int on_body(http_parser* p, const char*, std::size_t length) {
    auto& impl = impl_of(p);
    impl.body_bytes += length;
    if (impl.body_bytes > k_max_body_bytes) {
        impl.body_too_large = true;
        return 1;
    }
    return 0;
}

int on_message_complete(http_parser* p) {
    auto& impl = impl_of(p);
    impl.message_done = true;
    impl.started = false;
    http_parser_pause(p, 1);
    return 0;
}

}  // namespace

RequestParser::RequestParser() : m_impl(std::make_unique<Impl>()) {
    http_parser_init(&m_impl->parser, HTTP_REQUEST);
    m_impl->parser.data = m_impl.get();
    http_parser_settings_init(&m_impl->settings);
    m_impl->settings.on_message_begin = on_message_begin;
    m_impl->settings.on_url = on_url;
    m_impl->settings.on_header_field = on_header_field;
    m_impl->settings.on_headers_complete = on_headers_complete;
    m_impl->settings.on_body = on_body;
    m_impl->settings.on_message_complete = on_message_complete;
}

RequestParser::~RequestParser() = default;

std::optional<ParseError> RequestParser::feed(std::string_view bytes, std::vector<Request>& out,
                                              std::size_t max_requests) {
    Impl& impl = *m_impl;
    const std::size_t size = bytes.size();
    std::size_t completed = 0;
    while (!bytes.empty() && !impl.error && !impl.finished && completed < max_requests) {
        // Within a head, never hand the parser more than one byte past the limit: an
        // oversized head is refused as soon as it is, whatever the chunk size.
        std::size_t chunk = bytes.size();
        if (!impl.in_body) {
            chunk = std::min(chunk, k_max_head_bytes + 1 - impl.head_bytes);
        }
        std::size_t used = http_parser_execute(&impl.parser, &impl.settings, bytes.data(), chunk);
        bytes.remove_prefix(std::min(used, bytes.size()));
        if (!impl.in_body) {
            impl.head_bytes += used;
        }
        auto error = HTTP_PARSER_ERRNO(&impl.parser);
        if (error == HPE_PAUSED) {
            http_parser_pause(&impl.parser, 0);
        } else if (error == HPE_HEADER_OVERFLOW) {
            impl.error = ParseError{431, "request header fields too large"};
            break;
        } else if (error == HPE_CB_header_field && impl.space_in_name) {
            impl.error = ParseError{400, "malformed request: whitespace before a header's colon"};
            break;
        } else if (error == HPE_CB_body && impl.body_too_large) {
            impl.error = ParseError{413, "request body too large"};
            break;
        } else if (error != HPE_OK) {
            impl.error =
                ParseError{400, std::string("malformed request: ") + http_errno_description(error)};
            break;
        }
        if (impl.head_done) {
            impl.head_done = false;
            if (impl.head_bytes > k_max_head_bytes) {
                impl.error = ParseError{431, "request header fields too large"};
                break;
            }
            if (impl.current.version_major != 1 || impl.current.version_minor > 1) {
                impl.error = ParseError{505, "HTTP version not supported: HTTP/1.0 and 1.1 only"};
                break;
            }
            impl.in_body = true;
        } else if (!impl.in_body && impl.head_bytes > k_max_head_bytes) {
            impl.error = ParseError{431, "request header fields too large"};
            break;
        }
        if (impl.message_done) {
            impl.message_done = false;
            impl.in_body = false;
            impl.head_bytes = 0;
            if (impl.parser.upgrade != 0) {
                // An Upgrade or CONNECT: what follows is not HTTP; answer and close.
                impl.current.keep_alive = false;
                impl.finished = true;
            }
            out.push_back(std::move(impl.current));
            impl.current = Request{};
            ++completed;
        } else if (used == 0 && error != HPE_PAUSED) {
            break;  // no progress without an error: wait for more bytes
        }
    }
    m_started = impl.started;
    m_consumed = size - bytes.size();
    return impl.error;
}

}  // namespace pkit::shell::http
