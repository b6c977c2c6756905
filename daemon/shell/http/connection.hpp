#pragma once
// One client of the HTTP endpoint: reads requests, answers each in order, keeps the
// connection for the next one (HTTP/1.1 keep-alive, HTTP/1.0 with keep-alive) or
// closes it. A malformed request gets its error status and the connection closes
// after it has been written.
//
// A connection begins unseated (in the Server's lobby): it is read and its requests
// whose replies are small and fixed (answers_unseated(): /healthz, /livez, 404, 405,
// the errors) are answered there. The first request that needs more (/metrics,
// /readyz) waits, unanswered and with nothing more read, until the Server seats it
// (seat()); a seated connection keeps its seat until it closes. The bounds a client on
// the open network meets:
//   - idle: no byte from the client for k_idle_ms (and no reply under way): closed;
//     a request that has waited that long for a seat is answered 503 and closed;
//   - a request head (and its short body) not complete k_head_ms after its first
//     byte: closed, however steadily it trickles in;
//   - unsent replies over k_max_unsent_bytes (k_lobby_unsent_bytes unseated), or a
//     body going out by sendfile: no further request is read (the bytes wait in the
//     kernel) until the client has taken them;
//   - a reply the kernel has no room for, and the client has taken nothing of it for
//     k_stalled_ms (neither what pkitd writes nor, looked at every k_look_ms, what the
//     kernel's buffer holds): the connection counts as stalled (evictable; a client
//     that reads along, even with pauses of a second or two, is not); when the client
//     takes nothing for k_stall_ms, it is closed.
// A /metrics body held in a memfd goes out with sendfile(2) after its head, while the
// socket takes it; when the socket is full, a write of its next k_wait_bytes waits for
// room (libuv polls for it). No further request is answered until the body is out.
// The Server evicts a connection (evict()) when it needs the place; evictable() says
// whether and how willingly.

#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

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
// How often a connection whose replies wait for room looks whether its client took
// bytes from the kernel's buffer (a slow reader frees room before pkitd can write).
inline constexpr std::uint64_t k_look_ms = 500;
// A reply's client that has taken nothing for this long is stalled: longer than the
// pauses of a scraper that reads slowly (a second or two), so that it keeps its seat
// until its reply is written.
inline constexpr std::uint64_t k_stalled_ms = 3'000;
// The kernel's send buffer of a seated connection (SO_SNDBUF; Linux doubles it).
// Unbounded, loopback autotuning lets a client that never reads take megabytes of
// kernel memory (charged to pkitd's cgroup), and pkitd copies them in one turn of the
// loop. An unseated connection, whose replies are a few hundred bytes, gets
// k_lobby_send_buffer_bytes.
inline constexpr int k_send_buffer_bytes = 256 * 1024;
inline constexpr int k_lobby_send_buffer_bytes = 8 * 1024;
// An unseated connection reads no further request while more than this of its replies
// is unsent (a client pipelining probes and reading none of the answers).
inline constexpr std::size_t k_lobby_unsent_bytes = 4 * 1024;
// After the last response of a closing connection: how long unread bytes are drained
// so that the client reads the response before the close (no reset that loses it).
inline constexpr std::uint64_t k_linger_ms = 2'000;
// What a connection writes itself of a body it sends with sendfile(2), to wait for
// room in a full socket: libuv writes it as soon as there is, and says so.
inline constexpr std::size_t k_wait_bytes = 4096;
// A connection that has sent no byte yet is fresh this long after its accept: its
// request may still be on its way, so it is evicted only after stalled ones.
inline constexpr std::uint64_t k_fresh_ms = 1'000;

// How willingly a connection gives up its place, most willing first.
enum class Eviction {
    done,      // its last reply is written; it only drains the client
    idle,      // no reply under way: idle between requests, or a request trickling in
    stalled,   // a reply waits for a client that has taken none of it for k_stalled_ms
    waiting,   // unseated, its request waits for a seat: evicted with a 503
    fresh,     // unseated, accepted under k_fresh_ms ago, nothing received yet
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
    // The loop time (ms) at which evictable() would change by itself, with no event:
    // a reply's stall, the end of freshness; nullopt when only an event changes it.
    std::optional<std::uint64_t> evictable_change() const;
    bool seated() const { return m_seated; }
    // A request of it waits for a seat: /readyz (a probe) goes before /metrics.
    bool wants_seat() const { return m_held.has_value(); }
    bool probe_waiting() const { return m_held && m_held->path == "/readyz"; }
    // The Server gives it a seat: the request that waited is answered, and the next.
    // Called from the Server's own turn, never from inside this connection's callback.
    void seat();
    // The Server takes its place: a request waiting for a seat is answered 503 first.
    // Last act, as close().
    void evict();
    // Bytes wait in its socket, unread: an idle connection whose request has come
    // (one ioctl, so the Server asks only of the one it would evict).
    bool request_waiting() const;
    // Loop time (ms) since when it has been in its evictable() class; the oldest
    // goes first.
    std::uint64_t since() const;
    // Last act: hands the connection to the server, which destroys it.
    void close();
    // The turn the Server deferred this connection's body to (defer()) has come.
    void send_more();

private:
    void on_read(ssize_t nread, const uv_buf_t* buf);
    // A request parsed: answered now, or held for a seat (false: stop parsing).
    bool take(const Request& request);
    void on_idle();
    void on_written(int status);
    // After a write completed or a deferred body's turn came: the body's rest, then
    // the next request, or the end of the connection.
    void go_on();
    // Parses and answers the stashed bytes, one request at a time, until they are
    // used up or the connection is blocked (over its output bound, or waiting for
    // /metrics); then reads from the client again if it is not blocked.
    void pump();
    bool blocked() const;
    void answer(const Request& request);
    void on_metrics(MetricsCache::Body body);
    void fail(const ParseError& error);
    void send(std::string head, MetricsCache::Body body = {});
    // Queues `head`, then `piece` (bytes of `body`, which keeps them alive) in libuv.
    void queue(std::string head, MetricsCache::Body body = {}, std::string_view piece = {});
    // Sends the rest of m_file with sendfile(2) while the socket takes it, then queues
    // its next k_wait_bytes to wait for room; over the Server's budget for this turn,
    // it waits for send_more() instead. Called only when libuv has nothing of this
    // connection's left to write, so that the bytes go out in order. False when the
    // client is gone (the connection is to close).
    bool send_file();
    // Bytes of replies not yet handed to the kernel: libuv's queue and m_file's rest.
    std::size_t unsent() const;
    void read(bool on);
    // Arms the stall check while replies wait for the client, disarms it when none does.
    void watch_output();
    // The bytes of this connection the kernel holds unacknowledged (SIOCOUTQ).
    std::size_t kernel_queued() const;
    // Notes progress when the kernel holds fewer bytes than at the last look.
    void look() const;
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
    // The bytes the kernel held for the client at the last look (look()).
    mutable std::size_t m_queued_mark = 0;
    std::uint64_t m_accepted_ms = 0;
    std::uint64_t m_idle_since_ms = 0;
    mutable std::uint64_t m_progress_ms = 0;  // a reply began or the client took bytes
    std::uint64_t m_held_since_ms = 0;
    std::uint64_t m_metrics_ticket = 0;  // waiting for the MetricsCache
    std::optional<Request> m_held;       // waits for a seat
    Request m_metrics_request;           // the request that waits for it
    MetricsCache::Body m_file;           // a body going out by sendfile(2)
    std::size_t m_file_sent = 0;         // its bytes handed to the kernel or to libuv
    bool m_waits_turn = false;           // deferred by the Server to a later turn
    bool m_finishing = false;
    bool m_lingering = false;
    bool m_reading = false;
    bool m_client_done = false;  // the client shut down its writing side
    bool m_heard = false;        // a byte has come from the client
    bool m_seated = false;
};

}  // namespace pkit::shell::http
