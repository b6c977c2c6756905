#pragma once
// The HTTP endpoint's listener (SPEC §11), on pkitd's libuv loop. Every connection is
// accepted into the lobby (at most k_max_lobby), where the requests with small fixed
// replies are answered (a liveness probe: /healthz, /livez); a request that needs more
// (/metrics, /readyz) waits there for one of k_max_connections seats, which it keeps
// until it closes, so that a reply being read, however slowly, is written whole. Seats
// go in order of asking, a /readyz before a /metrics; when all are taken, the one
// asking first evicts the seated connection that least needs its seat
// (Connection::evictable(): one whose last reply is written, else the longest idle
// between requests, else the longest stalled by a client that has taken nothing of its
// reply for k_stalled_ms); a reply being written to a client that reads is never cut.
// A full lobby makes room for a newcomer the same way (one only closing, the longest
// idle or trickling, the longest stalled, then the one waiting longest for a seat,
// answered 503, then the oldest fresh one), so that a probe always gets in however many
// clients hold the seats or fill the lobby. Only when no connection of the lobby may
// go does it stop accepting: libuv keeps the connection it has taken off the backlog
// unaccepted and stops polling the listener until settle() takes it, so the others
// wait in the kernel's backlog. Nothing here arms a timer while no connection is open.

#include <sys/socket.h>
#include <uv.h>

#include <cstddef>
#include <deque>
#include <expected>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon/shell/http/metrics_cache.hpp"
#include "daemon/shell/http/router.hpp"
#include "daemon/shell/uv_handle.hpp"

namespace pkit::shell::http {

// Seats: connections that may be sent a /metrics or /readyz reply.
inline constexpr std::size_t k_max_connections = 64;
// Connections without a seat: a few hundred bytes of pkitd's memory each, and a small
// socket buffer (k_lobby_send_buffer_bytes).
inline constexpr std::size_t k_max_lobby = 256;
// The most a turn of the loop spends in sendfile(2) for /metrics bodies (the kernel's
// TCP work, which for a loopback client includes its receiving): with 64 scrapers a
// turn would otherwise take 10-20 ms, and a `pkitctl status` waits behind it.
inline constexpr std::uint64_t k_send_slice_ns = 2'000'000;

class Connection;

class Server {
public:
    // Resolves `listen` ("host:port", "[v6]:port"; a name is resolved now, blocking:
    // pkitd's start-up only), binds and listens. The error names the address and the
    // reason.
    static std::expected<std::unique_ptr<Server>, std::string> open(uv_loop_t* loop,
                                                                    const std::string& listen,
                                                                    Sources sources);
    // The same at an address already resolved (`listen` is what the errors name).
    static std::expected<std::unique_ptr<Server>, std::string> open_at(
        uv_loop_t* loop, const std::string& listen, const sockaddr_storage& address,
        Sources sources);
    // The listener a previous pkitd handed over in `fd` (SPEC §16), bound to `listen`.
    static std::expected<std::unique_ptr<Server>, std::string> adopt(uv_loop_t* loop,
                                                                     const std::string& listen,
                                                                     Sources sources, int fd);
    int listener_fd() const;
    // `listen` as an address when its host is numeric (an IPv4 or [IPv6] literal),
    // which needs no resolver; nullopt for a name (or a malformed address).
    static std::optional<sockaddr_storage> numeric_address(const std::string& listen);
    // The host and the port of `listen`, the brackets of an IPv6 literal removed.
    static std::pair<std::string, std::string> split_listen(const std::string& listen);
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    const std::string& listen() const { return m_listen; }
    const sockaddr_storage& address() const { return m_address; }
    std::size_t connections() const { return m_connections.size(); }
    std::size_t seated() const { return m_seated; }

    // --- For Connection ------------------------------------------------------------
    const Sources& sources() const { return m_sources; }
    MetricsCache& metrics() { return m_metrics; }
    // A connection may have become evictable: try the waiting clients on the next turn
    // (never now, from inside the connection's own callback).
    void wake() { m_wake.schedule(); }
    // The connection's request waits for a seat (Connection::seat() at a later turn).
    void want_seat(Connection* connection);
    // The connection has closed its handle: forget it, and take a waiting client at
    // the next turn. Call as the connection's last act; it is destroyed here.
    void release(Connection* connection);
    // Where a connection reads into: one buffer for all, as each read is used at once.
    uv_buf_t read_buffer() {
        return uv_buf_init(m_read_buffer.data(), static_cast<unsigned>(m_read_buffer.size()));
    }
    // Whether this turn's sending budget (k_send_slice_ns) has room; spent() counts
    // against it, and the first send of a turn always has it. A connection that finds
    // none defer()s itself: its send_more() runs on the next turn, with a new budget.
    bool may_send();
    void spent(std::uint64_t ns) { m_send_spent_ns += ns; }
    void defer(Connection* connection);
    // For tests and figures: another budget, and how many sends waited for a turn.
    void set_send_slice(std::uint64_t ns) { m_send_slice_ns = ns; }
    std::uint64_t deferred() const { return m_deferrals; }

private:
    Server(uv_loop_t* loop, std::string listen, Sources sources);
    void on_connection(int status);
    // Seats the connections waiting for a seat, in order, evicting a seated one for each
    // while one may go; then accepts the connection libuv holds into the lobby, evicting
    // one of the lobby for it when the lobby is full. Whoever still waits is tried again
    // when a connection closes or turns evictable (wake), or by m_retry.
    void settle();
    void seat_waiting();
    void admit();
    // The first connection waiting for a seat (those that no longer want one dropped).
    Connection* next_waiting();
    // The connection to evict among the seated or the lobby, or null when none may go.
    Connection* victim(bool seated) const;
    // Arms m_retry for when a connection would turn evictable by itself.
    void retry_later();
    void resume_sends();

    uv_loop_t* m_loop;
    std::string m_listen;
    sockaddr_storage m_address{};
    Sources m_sources;
    MetricsCache m_metrics;
    NextTurn m_wake;
    Timer m_retry;  // while a client waits for a slot that nothing else will free
    UvHandle<uv_tcp_t> m_listener;
    std::vector<std::unique_ptr<Connection>> m_connections;  // seated and lobby
    std::size_t m_seated = 0;
    std::deque<Connection*> m_probes_waiting;  // /readyz requests waiting for a seat
    std::deque<Connection*> m_seats_waiting;   // the others
    bool m_waiting = false;                    // libuv holds a connection not accepted yet
    std::vector<char> m_read_buffer = std::vector<char>(16 * 1024);
    NextTurn m_send_next;
    std::vector<Connection*> m_deferred;   // waiting for the next turn's budget
    std::uint64_t m_send_turn_ms = ~0ULL;  // the loop time the budget is for
    std::uint64_t m_send_spent_ns = 0;
    std::uint64_t m_send_slice_ns = k_send_slice_ns;
    std::uint64_t m_deferrals = 0;
};

}  // namespace pkit::shell::http
