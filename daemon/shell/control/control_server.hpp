#pragma once
// The control socket (SPEC §9): a Unix stream socket served from pkitd's libuv loop.
//
// The server knows framing, credentials and back-pressure, and nothing of the daemon:
// each well-formed request goes to a ControlHandler, which answers through reply()
// (now or later) and may then stream lines with send(). Requests of one connection are
// handed over strictly one at a time, in order: the next one is not read out of the
// connection's buffer until the current one has its reply. Lines that do not parse are
// answered by the server itself (bad_request, unknown_command, too_large).
//
// Nothing here blocks the loop or throws into libuv: a slow, hostile or vanished
// client costs only its own connection.

#include <sys/types.h>
#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <expected>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "daemon/shell/control/carried_client.hpp"
#include "daemon/shell/uv_handle.hpp"
#include "proto/request.hpp"

namespace pkit::shell {

using ConnectionId = std::uint64_t;

// The daemon's side of the socket. Both calls come from the loop, never from inside
// reply(), send() or start_stream(), so a handler may change its own bookkeeping (its
// list of event subscribers, say) while it is being called.
class ControlHandler {
public:
    virtual ~ControlHandler() = default;
    // One parsed request. The handler must answer it exactly once with reply(), from
    // inside this call or later; until then the connection's next request waits.
    virtual void on_request(ConnectionId connection, proto::Request request) = 0;
    // The connection is gone (closed by the client, a write error, or an overflowing
    // backlog). Its id is never reused; reply() and send() on it are ignored.
    // Not called for connections dropped by close_all() or by destroying the server.
    virtual void on_disconnect(ConnectionId connection) = 0;
};

struct SocketOptions {
    std::string path;
    // control_users, resolved to uids. When any are set the socket is mode 0666 and
    // authorisation rests on the credential check alone (SPEC §9).
    std::vector<uid_t> allowed_uids;
    // control_group, resolved: the socket's group (mode 0660 when no users are set),
    // and its members, by primary or supplementary group, are served.
    std::optional<gid_t> allowed_gid;
    // Root and pkitd's own uid are always served. Tests turn this off to see the
    // forbidden path while running as root.
    bool trust_root_and_self = true;
    // Writes to slow readers are buffered with a bound, counted in the memory the
    // queue holds: each queued piece's text plus k_piece_overhead_bytes. A client whose
    // replies back up past a quarter of this has its next requests wait (and is not
    // read) until it has read them; a streaming client (events, logs --follow) whose
    // unwritten output would pass this is disconnected, since it may never read.
    std::size_t max_backlog_bytes = 1024 * 1024;
};

// What one queued piece of output costs beyond its text, counted against
// max_backlog_bytes: its queue slot, its shared_ptr's control block, the string's
// header and the allocator's headers, rounded up.
inline constexpr std::size_t k_piece_overhead_bytes = 96;

// Output text that may be queued on many connections at once without being copied:
// one event's body goes to every subscriber.
using SharedText = std::shared_ptr<const std::string>;

// A peer's credentials as the kernel reports them at connect time.
struct PeerCredentials {
    pid_t pid = 0;
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<gid_t> groups;  // supplementary groups, when they could be read
};

// The credential rule of SPEC §9, pure so it can be tested for every case.
bool is_authorized(const PeerCredentials& peer, const SocketOptions& options, uid_t self);

class ControlServer {
public:
    // Creates the socket's directory if missing (0755) and binds a fresh socket at
    // options.path with the mode of SPEC §9. Something already at the path: a socket
    // nothing answers on is replaced; a socket a live process answers on, or anything
    // that is not a socket, is an error (pkitd then exits 3). `handler` must outlive
    // the server.
    static std::expected<std::unique_ptr<ControlServer>, std::string> open(uv_loop_t* loop,
                                                                           SocketOptions options,
                                                                           ControlHandler& handler);
    // The socket bound at options.path and listening, that a previous pkitd handed over
    // in `fd` (SPEC §16): clients queued in its backlog meanwhile are served now.
    static std::expected<std::unique_ptr<ControlServer>, std::string> adopt(uv_loop_t* loop,
                                                                            SocketOptions options,
                                                                            ControlHandler& handler,
                                                                            int fd);
    // The listening socket's descriptor, for the hand-over; -1 when closed.
    int listener_fd() const;

    // Closes everything (see close_all). Must not be called from inside a handler call.
    ~ControlServer();

    ControlServer(const ControlServer&) = delete;
    ControlServer& operator=(const ControlServer&) = delete;

    // The one reply (a line from proto::ok_reply or error_reply) to the request being
    // handled on `connection`; then that connection's next queued request is handled.
    // Ignored when the connection is gone or has no request outstanding.
    void reply(ConnectionId connection, std::string line);

    // The one reply, after which the connection is ended as after too_large: pkitd
    // writes the line, shuts down its side and discards whatever the client still sends.
    void reply_and_end(ConnectionId connection, std::string line);

    // Sends a stream line (proto::event_line or log_line) after the reply. Returns
    // false when the connection is gone, including when this line would push its
    // unwritten backlog past max_backlog_bytes: the connection is then dropped.
    bool send(ConnectionId connection, std::string line);
    // The same line in two pieces (proto::event_head and stream_body, say), queued
    // without copying either: a body shared by many subscribers is held once.
    bool send(ConnectionId connection, SharedText head, SharedText body);

    // Marks the connection as streaming: further input on it is read and discarded,
    // and queued requests behind this one are dropped. Call it inside on_request
    // (before or after reply), so no later request is picked up in between.
    void start_stream(ConnectionId connection);

    // Replaces who may connect (control_users and control_group, resolved) and gives the
    // socket the mode and group that go with them (SPEC §9). Connections already open
    // were authorised when accepted and stay; the new rule applies to the next ones.
    std::expected<void, std::string> set_access(std::vector<uid_t> allowed_uids,
                                                std::optional<gid_t> allowed_gid);

    // Stops listening, closes every connection and removes the socket file. The
    // handles finish closing on the loop's next turn. Idempotent.
    void close_all();

    // --- Upgrade in place (SPEC §16) ---------------------------------------------------
    // Every connection the next pkitd takes over (all but the streaming ones and those
    // already closed), by id, as they stand now: nothing changes, so that pkitd goes on
    // as it was should the exec fail.
    std::vector<std::pair<ConnectionId, CarriedConnection>> carry() const;
    // Takes over a connection the previous pkitd handed over: its unwritten output is
    // written first, its request in flight (if any) is outstanding, to be answered with
    // reply() as any other. Nothing is read and no further request is handed to the
    // handler until resume_carried(id). Returns nullopt, with the descriptor closed,
    // when libuv cannot take it.
    std::optional<ConnectionId> adopt_connection(CarriedConnection carried);
    void resume_carried(ConnectionId id);

    std::size_t connection_count() const { return m_connections.size(); }
    // What connection `id`'s unwritten output holds, as counted against
    // max_backlog_bytes (0 when it is gone).
    std::size_t backlog_bytes(ConnectionId id) const;
    const std::string& path() const { return m_options.path; }

private:
    class Connection;
    friend class Connection;

    ControlServer(uv_loop_t* loop, SocketOptions options, ControlHandler& handler);

    static void on_connection(uv_stream_t* listener, int status);
    void accept_one();
    Connection* find(ConnectionId id);
    // Unregisters a closed connection; its object lives until the reap timer runs, so a
    // method of it may still be on the stack. Notifies the handler then, if `notify`.
    void retire(ConnectionId id, bool notify);
    void reap();
    // Closes connection `id` k_linger_ms from now unless it has closed by then.
    void linger(ConnectionId id);
    void end_lingering();

    uv_loop_t* m_loop;
    SocketOptions m_options;
    ControlHandler& m_handler;
    uid_t m_self;
    UvHandle<uv_pipe_t> m_listener;
    bool m_listening = false;
    ConnectionId m_next_id = 1;
    std::unordered_map<ConnectionId, std::unique_ptr<Connection>> m_connections;
    std::vector<std::unique_ptr<Connection>> m_retired;
    std::vector<ConnectionId> m_gone;  // retired with notice still owed to the handler
    // A retired connection held a large queue: reap() hands the freed memory back to
    // the system (malloc_trim) once its objects are gone.
    bool m_trim_owed = false;
    Timer m_reaper;
    // Finished connections waiting for their client's end of file, oldest first: every
    // one waits the same k_linger_ms, so the front is always the next to expire.
    static constexpr std::uint64_t k_linger_ms = 2000;
    std::deque<std::pair<std::uint64_t, ConnectionId>> m_lingering;  // (deadline, id)
    Timer m_linger_timer;
    // One read buffer for every connection: libuv fills it and the read callback copies
    // out what arrived, so an idle connection holds no buffer at all.
    std::unique_ptr<char[]> m_read_buffer;
};

}  // namespace pkit::shell
