#pragma once
// One client connection of the control server: NDJSON framing, one request in flight
// at a time, bounded output (requests paused while replies back up, streams dropped when
// their client never reads), and an orderly end after a half-close. Internal to the
// control server; the daemon only ever sees ConnectionIds.

#include <cstddef>
#include <deque>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/shell/control/control_server.hpp"

namespace pkit::shell {

class ControlServer::Connection {
public:
    Connection(ControlServer& server, ConnectionId id);

    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    // Accepts the pending connection of `listener` into this object's pipe.
    // Returns a libuv status.
    int accept(uv_stream_t* listener);
    int fd() const;

    // Starts reading requests from an authorised peer.
    void serve();
    // Answers an unauthorised peer with `line`, then ends the connection as finish()
    // does: its requests are read only to be discarded.
    void refuse(std::string line);

    void reply(std::string line);
    // The reply, then the connection ends as after too_large (finish()).
    void reply_and_end(std::string line);
    bool send(SharedText head, SharedText body);
    void start_stream();

    // Closes the connection now and retires it (the handler is told if it was served).
    void close();
    // Closes the connection for close_all(): nobody is told.
    void drop();

    // What the queued output holds in memory, including the write under way: text plus
    // k_piece_overhead_bytes a piece.
    std::size_t backlog() const;

    ConnectionId id() const { return m_id; }
    bool served() const { return m_served; }
    bool streaming() const { return m_streaming; }

    // Upgrade in place (SPEC §16): the connection as the next pkitd takes it over.
    CarriedConnection carry() const;
    // Takes `carried`'s descriptor into this object's pipe and its state over: its
    // output queued (and written as far as the socket takes it), its request in flight
    // outstanding. Returns a libuv status; on failure the descriptor is closed.
    int adopt(CarriedConnection carried);
    // Starts serving an adopted connection: reads on, or finishes.
    void resume();

private:
    // A write owns its pieces until libuv is done with them, also after its connection
    // has closed: libuv then calls on_write with UV_ECANCELED while closing the pipe.
    struct WriteRequest {
        uv_write_t request{};
        std::vector<SharedText> pieces;
        std::size_t bytes = 0;  // as counted in the backlog
    };

    static void on_alloc(uv_handle_t* handle, std::size_t suggested, uv_buf_t* buffer);
    static void on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buffer);
    static void on_write(uv_write_t* request, int status);
    static void on_shutdown(uv_shutdown_t* request, int status);

    void on_data(const char* data, std::size_t size);
    void on_eof();
    // Hands queued request lines to the handler, one at a time, until one is waiting
    // for its reply; then decides whether to read on, stop reading, or finish.
    void pump();
    // The next complete line, if any; answers too_large itself.
    bool next_line(std::string& line);
    void handle_line(std::string_view line);
    void update_reading();
    // Lets go of the line of the request just answered.
    void forget_request();
    // Queues `line` (a reply) for writing.
    bool write(std::string line);
    // Queues the pieces for writing, in order. With `bounded` (stream lines), drops the
    // connection instead when its backlog would pass max_backlog_bytes.
    bool write(std::initializer_list<SharedText> pieces, bool bounded);
    // Hands what is queued to libuv in one write (up to k_max_write_pieces pieces),
    // unless a write is under way: on_write then starts the next one. With
    // `everything`, in as many writes as it takes, whatever is under way (before a
    // shutdown). Returns false when the connection closed.
    bool flush(bool everything = false);
    // Above the pause mark (a quarter of max_backlog_bytes): no request is handled and
    // nothing read until the client has read its replies.
    bool backlogged() const;
    // Writes what is queued and shuts down pkitd's side. A client that has not shut down
    // its own side yet (refused, or past too_large) lingers: its further input is read
    // and discarded until its end of file, for at most k_linger_ms and k_linger_bytes,
    // so that a client still writing its request does not fail with EPIPE before it
    // reads the reply that says why. Then the connection closes.
    void finish();
    // pkitd's side is shut down: close now if the client's side is too, else linger.
    void on_shut_down();

    ControlServer& m_server;
    ConnectionId m_id;
    UvHandle<uv_pipe_t> m_pipe;
    std::string m_input;        // received bytes not yet handed over
    std::size_t m_start = 0;    // where the next line begins in m_input
    std::size_t m_scanned = 0;  // m_input before this holds no newline after m_start
    bool m_served = false;      // authorised: requests are read and the handler told
    bool m_reading = false;
    bool m_busy = false;  // a request is with the handler, awaiting its reply
    bool m_streaming = false;
    bool m_eof = false;      // the client shut down its writing side
    bool m_pumping = false;  // pump() is on the stack; reply() must not re-enter
    bool m_paused = false;   // requests wait for the backlog to drain (on_write resumes)
    bool m_finishing = false;
    bool m_shut_down = false;     // the shutdown of pkitd's side has completed
    std::size_t m_discarded = 0;  // bytes read and dropped while finishing
    bool m_closed = false;
    // Output not yet handed to libuv. Lines are coalesced: one write at a time carries
    // every piece queued meanwhile, so a stream of small lines costs one write request
    // per batch, not one per line.
    std::deque<SharedText> m_queue;
    std::size_t m_queued_bytes = 0;  // backlog(): m_queue plus the write under way
    std::size_t m_peak_bytes = 0;    // the backlog's high mark since it was last empty
    bool m_writing = false;          // a write is with libuv
    // The writes with libuv, oldest first (completed in that order): what an upgrade
    // hands over as unwritten is the tail of their pieces libuv has not written yet.
    std::deque<const WriteRequest*> m_writes;
    // The line of the request with the handler (while m_busy), for an upgrade to hand over.
    std::string m_request;
};

}  // namespace pkit::shell
