#pragma once
// A raw HTTP/1.x client over TCP for the endpoint's cases (SPEC §11): bytes out as
// written, responses parsed from what comes back, every read bounded by a deadline.

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>

namespace pkit::itest {

struct HttpReply {
    int status = 0;
    std::map<std::string, std::string> headers;  // names lowercased
    std::string body;
    std::string header(const std::string& name) const {
        auto it = headers.find(name);
        return it == headers.end() ? "" : it->second;
    }
};

class HttpConnection {
public:
    // Connects to 127.0.0.1:port; fails the case when it cannot. A `receive_buffer`
    // over 0 is set as SO_RCVBUF before the connect (set after, it shrinks the window
    // the connection already offered, and TCP then crawls).
    explicit HttpConnection(int port, int receive_buffer = 0);
    ~HttpConnection();
    HttpConnection(const HttpConnection&) = delete;
    HttpConnection& operator=(const HttpConnection&) = delete;

    // Writes bytes as they are; false when the peer has closed.
    bool send(const std::string& bytes);
    // The next response (no body read for a HEAD request: `head`), or nullopt at the
    // deadline or when the connection ends first.
    std::optional<HttpReply> read_reply(
        std::chrono::milliseconds timeout = std::chrono::seconds(10), bool head = false);
    // True when the server closes the connection (EOF or reset) within `timeout`;
    // bytes read meanwhile are dropped.
    bool closed_within(std::chrono::milliseconds timeout);
    int fd() const { return m_fd; }

private:
    // Reads more bytes into m_buffer; false at the deadline or at EOF.
    bool fill(std::chrono::steady_clock::time_point deadline);

    int m_fd = -1;
    std::string m_buffer;
    bool m_eof = false;
};

// One request on a fresh connection ("GET PATH HTTP/1.1", Connection: close); fails
// the case when no complete response comes.
HttpReply http_get(int port, const std::string& path, const std::string& method = "GET");

// Whether process `pid` holds the server side of the client connection `fd` (has
// accepted it and not closed it).
bool holds_peer_of(pid_t pid, int fd);

}  // namespace pkit::itest
