#pragma once
// HTTP/1.x request heads, parsed incrementally from a connection's bytes (SPEC §11).
// Pure: no socket, no loop, no clock, so it can be unit-tested and fuzzed. Bytes go
// in with feed(); complete requests and the first error come out in order. Bodies
// are read past and dropped (the endpoint has no use for one) within a bound.
//
// Built on http-parser: it is paused at the end of each head and of each message, so
// the head's size is known exactly and pipelined requests come out one by one.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pkit::shell::http {

// The largest request head accepted: request line and header lines (SPEC §11: 431).
inline constexpr std::size_t k_max_head_bytes = 8 * 1024;
// The largest request body read past (the endpoint reads nothing): 413 beyond it.
inline constexpr std::size_t k_max_body_bytes = 8 * 1024;

struct Request {
    std::string method;  // "GET", "HEAD", "POST", ... as http-parser knows them
    std::string path;    // the target's path, without query or fragment
    int version_major = 1;
    int version_minor = 1;
    bool keep_alive = true;  // HTTP/1.1 unless "close"; HTTP/1.0 only with "keep-alive"
    bool operator==(const Request&) const = default;
};

// Why the bytes can no longer be read as requests; the connection answers with
// `status` and closes.
struct ParseError {
    // 400 malformed, 431 head too large, 413 body too large, 505 a version other
    // than HTTP/1.0 and HTTP/1.1
    int status = 400;
    std::string message;  // for a log or the response body
    bool operator==(const ParseError&) const = default;
};

class RequestParser {
public:
    RequestParser();
    ~RequestParser();
    RequestParser(const RequestParser&) = delete;
    RequestParser& operator=(const RequestParser&) = delete;

    // Consumes `bytes`, appending every request completed by them to `out`. Returns
    // the error that ends the stream, if any; after one, every later call returns it
    // again and consumes nothing. Requests completed before the error are in `out`.
    // With `max_requests`, it stops once that many requests are complete; consumed()
    // then tells where the bytes for the next call begin.
    std::optional<ParseError> feed(std::string_view bytes, std::vector<Request>& out,
                                   std::size_t max_requests = SIZE_MAX);
    // How many bytes the last feed() consumed.
    std::size_t consumed() const { return m_consumed; }

    // True while a request has begun and is not complete (bytes wait for the rest).
    bool in_request() const { return m_started; }

    // The parser's state (request_parser.cpp); public only for its callbacks.
    struct Impl;

private:
    std::unique_ptr<Impl> m_impl;
    bool m_started = false;
    std::size_t m_consumed = 0;
};

}  // namespace pkit::shell::http
