#pragma once
// One client of the HTTP endpoint: reads requests, answers each in order, keeps the
// connection for the next one (HTTP/1.1 keep-alive, HTTP/1.0 with keep-alive) or
// closes it. A malformed request gets its error status and the connection closes
// after it has been written. The bounds a client on the open network meets:
//   - idle: no byte from the client for k_idle_ms (and no reply under way): closed;
//   - a request head (and its short body) not complete k_head_ms after its first
//     byte: closed, however steadily it trickles in;
//   - unsent replies over k_max_unsent_bytes: no further request is read (the bytes
//     wait in the kernel) until the client has taken them below it; when it takes
//     none of them for k_stall_ms, the connection is closed.
// The Server evicts a connection (close()) when it needs the slot; evictable() says
// whether and how willingly.

#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "daemon/shell/http/metrics_cache.hpp"
#include "daemon/shell/http/request_parser.hpp"
#include "daemon/shell/http/response.hpp"
#include "daemon/shell/uv_handle.hpp"

namespace pkit::shell::http {

class Server;

inline constexpr std::uint64_t k_idle_ms = 10'000;
inline constexpr std::uint64_t k_head_ms = 5'000;
inline constexpr std::size_t k_max_unsent_bytes = 1024 * 1024;
inline constexpr std::uint64_t k_stall_ms = 10'000;
// The kernel's send buffer of a connection (SO_SNDBUF; Linux doubles it). Unbounded,
// loopback autotuning lets a client that never reads take megabytes of kernel memory
// (charged to pkitd's cgroup), and pkitd copies them in one turn of the loop.
inline constexpr int k_send_buffer_bytes = 256 * 1024;
// After the last response of a closing connection: how long unread bytes are drained
// so that the client reads the response before the close (no reset that loses it).
inline constexpr std::uint64_t k_linger_ms = 2'000;

// How willingly a connection gives up its slot, most willing first.
enum class Eviction {
    done,      // its last reply is written; it only drains the client
    idle,      // no reply under way: idle between requests, or a request trickling in
    stalled,   // held at the unsent-output bound by a client that does not read
    mid_reply  // a reply is being written or rendered: never evicted
};

class Connection {
public:
    Connection(Server& server, uv_loop_t* loop);
    ~Connection();
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    uv_stream_t* stream() const { return m_tcp.as_stream(); }
    uv_handle_t* handle() const { return m_tcp.as_handle(); }
    // After uv_accept: starts reading and the idle timer.
    void start();

    // Whether the Server may evict it. A connection accepted in this millisecond of
    // the loop is not idle yet: its request may be on its way.
    Eviction evictable() const;
    // Bytes wait in its socket, unread: an idle connection whose request has come
    // (one ioctl, so the Server asks only of the one it would evict).
    bool request_waiting() const;
    // Loop time (ms) since when it has been in its evictable() class; the oldest
    // goes first.
    std::uint64_t since() const;
    // Last act: hands the connection to the server, which destroys it.
    void close();

private:
    void on_read(ssize_t nread, const uv_buf_t* buf);
    void on_written(int status);
    // Parses and answers the stashed bytes, one request at a time, until they are
    // used up or the connection is blocked (over its output bound, or waiting for
    // /metrics); then reads from the client again if it is not blocked.
    void pump();
    bool blocked() const;
    void answer(const Request& request);
    void on_metrics(MetricsCache::Body body);
    void fail(const ParseError& error);
    void send(std::string head, MetricsCache::Body body = {});
    void read(bool on);
    // Arms or disarms the stall check as the unsent output crosses the bound.
    void watch_output();
    // Stops reading requests; once everything is written, shuts down the writing side
    // and drains the client for up to k_linger_ms.
    void finish();
    void linger();

    Server& m_server;
    uv_loop_t* m_loop;
    UvHandle<uv_tcp_t> m_tcp;
    Timer m_timer;        // idle, then linger
    Timer m_head_timer;   // the request head's deadline
    Timer m_stall_timer;  // the output bound's
    RequestParser m_parser;
    std::string m_stash;  // bytes read and not parsed yet (while blocked)
    std::size_t m_writes = 0;
    std::size_t m_stall_mark = 0;  // unsent bytes at the last stall check
    std::uint64_t m_accepted_ms = 0;
    std::uint64_t m_idle_since_ms = 0;
    std::uint64_t m_stalled_since_ms = 0;
    std::uint64_t m_metrics_ticket = 0;  // waiting for the MetricsCache
    Request m_metrics_request;           // the request that waits for it
    bool m_finishing = false;
    bool m_lingering = false;
    bool m_reading = false;
    bool m_client_done = false;  // the client shut down its writing side
    char m_buffer[16 * 1024];
};

}  // namespace pkit::shell::http
