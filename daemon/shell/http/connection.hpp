#pragma once
// One client of the HTTP endpoint: reads requests, answers each in order, keeps the
// connection for the next one (HTTP/1.1 keep-alive, HTTP/1.0 with keep-alive) or
// closes it. A client idle for k_idle_ms is dropped; a malformed request gets its
// error status and the connection closes after it has been written.

#include <uv.h>

#include <cstddef>
#include <cstdint>

#include "daemon/shell/http/request_parser.hpp"
#include "daemon/shell/http/response.hpp"
#include "daemon/shell/uv_handle.hpp"

namespace pkit::shell::http {

class Server;

inline constexpr std::uint64_t k_idle_ms = 10'000;
// After the last response of a closing connection: how long unread bytes are drained
// so that the client reads the response before the close (no reset that loses it).
inline constexpr std::uint64_t k_linger_ms = 2'000;
// Reading pauses while more than this waits to be written (a client that pipelines
// requests without reading the answers).
inline constexpr std::size_t k_max_queued_bytes = 4 * 1024 * 1024;

class Connection {
public:
    Connection(Server& server, uv_loop_t* loop);
    ~Connection();
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    uv_stream_t* stream() const { return m_tcp.as_stream(); }
    // After uv_accept: starts reading and the idle timer.
    void start();

private:
    void on_read(ssize_t nread, const uv_buf_t* buf);
    void on_written(int status);
    void answer(const Request& request);
    void fail(const ParseError& error);
    void send(std::string bytes);
    // Stops reading requests; once everything is written, shuts down the writing side
    // and drains the client for up to k_linger_ms.
    void finish();
    void linger();
    // Last act: hands the connection to the server, which destroys it.
    void close();

    Server& m_server;
    UvHandle<uv_tcp_t> m_tcp;
    Timer m_timer;
    RequestParser m_parser;
    std::size_t m_writes = 0;
    bool m_finishing = false;
    bool m_lingering = false;
    bool m_reading = false;
    char m_buffer[16 * 1024];
};

}  // namespace pkit::shell::http
