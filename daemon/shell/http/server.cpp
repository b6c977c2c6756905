#include "daemon/shell/http/server.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "daemon/shell/http/connection.hpp"

namespace pkit::shell::http {

namespace {

// The kernel's queue of connections not yet accepted (SOMAXCONN caps it): a burst
// waits there to be accepted, each evicting an idle one, so it must hold a flood
// without dropping the SYN of a probe behind it.
constexpr int k_backlog = 4096;

// "host:port" or "[v6]:port" (the loader has checked the form) to an address.
// `flags` AI_NUMERICHOST: literals only, which never consult a resolver.
std::expected<sockaddr_storage, std::string> resolve(const std::string& listen, int flags) {
    auto [host, port] = Server::split_listen(listen);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | flags;
    addrinfo* found = nullptr;
    int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
    if (rc != 0 || found == nullptr) {
        return std::unexpected(std::string("cannot resolve \"") + host +
                               "\": " + ::gai_strerror(rc));
    }
    sockaddr_storage out{};
    std::memcpy(&out, found->ai_addr, std::min<std::size_t>(found->ai_addrlen, sizeof out));
    ::freeaddrinfo(found);
    return out;
}

// TCP_DEFER_ACCEPT: the kernel hands a connection over once its first bytes have come,
// or, for one that sends nothing, about this many seconds after its handshake. A client
// whose request is still on its way then holds no slot meanwhile: a probe is accepted
// with its request, and cannot be evicted as "fresh" by another newcomer before its
// request arrives (1 probe in 300 was, under 64 pipelining clients). Best effort: where
// the option is refused, the "fresh" rule of eviction still applies.
constexpr int k_defer_accept_s = 1;

void defer_accept(uv_tcp_t* listener) {
    int fd = -1;
    if (uv_fileno(reinterpret_cast<const uv_handle_t*>(listener), &fd) == 0) {
        int seconds = k_defer_accept_s;
        (void)::setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &seconds, sizeof seconds);
    }
}

// The longest a client waiting for a seat or the lobby goes without a new look, when
// no connection says when it turns evictable: closes and idle connections wake the
// Server at once, so this only bounds what no event announces.
constexpr std::uint64_t k_retry_ms = 50;

}  // namespace

Server::Server(uv_loop_t* loop, std::string listen, Sources sources)
    : m_loop(loop),
      m_listen(std::move(listen)),
      m_sources(std::move(sources)),
      m_metrics(loop, m_sources.metrics),
      m_wake(loop, [this] { settle(); }),
      m_retry(loop),
      m_listener(this),
      m_send_next(loop, [this] { resume_sends(); }) {}

Server::~Server() {
    m_connections.clear();
    m_listener.reset();
}

std::pair<std::string, std::string> Server::split_listen(const std::string& listen) {
    std::size_t colon = listen.rfind(':');
    if (colon == std::string::npos) {
        return {listen, ""};
    }
    std::string host = listen.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    }
    return {host, listen.substr(colon + 1)};
}

std::optional<sockaddr_storage> Server::numeric_address(const std::string& listen) {
    auto address = resolve(listen, AI_NUMERICHOST);
    return address ? std::optional(*address) : std::nullopt;
}

std::expected<std::unique_ptr<Server>, std::string> Server::open(uv_loop_t* loop,
                                                                 const std::string& listen,
                                                                 Sources sources) {
    auto address = resolve(listen, 0);
    if (!address) {
        return std::unexpected("cannot listen on " + listen +
                               " ([http] listen): " + address.error());
    }
    return open_at(loop, listen, *address, std::move(sources));
}

std::expected<std::unique_ptr<Server>, std::string> Server::open_at(uv_loop_t* loop,
                                                                    const std::string& listen,
                                                                    const sockaddr_storage& address,
                                                                    Sources sources) {
    auto failed = [&](const std::string& why) {
        return std::unexpected("cannot listen on " + listen + " ([http] listen): " + why);
    };
    std::unique_ptr<Server> server(new Server(loop, listen, std::move(sources)));
    server->m_address = address;
    int rc = server->m_listener.init(uv_tcp_init, loop);
    if (rc == 0) {
        rc = uv_tcp_bind(server->m_listener.get(), reinterpret_cast<const sockaddr*>(&address), 0);
    }
    if (rc == 0) {
        defer_accept(server->m_listener.get());
        rc = uv_listen(server->m_listener.as_stream(), k_backlog,
                       [](uv_stream_t* listener, int status) {
                           if (auto* self = static_cast<Server*>(listener->data)) {
                               self->on_connection(status);
                           }
                       });
    }
    if (rc != 0) {
        return failed(uv_strerror(rc));
    }
    return server;
}

std::expected<std::unique_ptr<Server>, std::string> Server::adopt(uv_loop_t* loop,
                                                                  const std::string& listen,
                                                                  Sources sources, int fd) {
    std::unique_ptr<Server> server(new Server(loop, listen, std::move(sources)));
    socklen_t length = sizeof server->m_address;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&server->m_address), &length);
    int rc = server->m_listener.init(uv_tcp_init, loop);
    if (rc == 0) {
        rc = uv_tcp_open(server->m_listener.get(), fd);
    }
    if (rc == 0) {
        defer_accept(server->m_listener.get());  // a listener from an older pkitd too
        rc = uv_listen(server->m_listener.as_stream(), k_backlog,
                       [](uv_stream_t* listener, int status) {
                           if (auto* self = static_cast<Server*>(listener->data)) {
                               self->on_connection(status);
                           }
                       });
    }
    if (rc != 0) {
        return std::unexpected("cannot take over " + listen +
                               " ([http] listen): " + uv_strerror(rc));
    }
    return server;
}

int Server::listener_fd() const {
    uv_os_fd_t fd = -1;
    if (!m_listener.initialized() ||
        uv_fileno(reinterpret_cast<const uv_handle_t*>(m_listener.get()), &fd) != 0) {
        return -1;
    }
    return fd;
}

void Server::on_connection(int status) {
    if (status < 0) {
        return;  // EMFILE and the like: libuv retries on the next readiness
    }
    m_waiting = true;
    settle();
}

Connection* Server::victim(bool seated) const {
    struct Candidate {
        Eviction eviction;
        std::uint64_t since;
        Connection* connection;
    };
    std::vector<Candidate> candidates;
    candidates.reserve(m_connections.size());
    for (const auto& connection : m_connections) {
        if (connection->seated() != seated) {
            continue;
        }
        Eviction e = connection->evictable();
        if (e != Eviction::mid_reply) {
            candidates.push_back({e, connection->since(), connection.get()});
        }
    }
    // Stable: of two alike since the same millisecond, the one accepted first goes.
    std::ranges::stable_sort(candidates, [](const Candidate& a, const Candidate& b) {
        return std::pair(a.eviction, a.since) < std::pair(b.eviction, b.since);
    });
    for (const Candidate& c : candidates) {
        const bool quiet = c.eviction == Eviction::idle || c.eviction == Eviction::fresh;
        if (!quiet || !c.connection->request_waiting()) {
            return c.connection;
        }
    }
    return nullptr;
}

void Server::want_seat(Connection* connection) {
    (connection->probe_waiting() ? m_probes_waiting : m_seats_waiting).push_back(connection);
    m_wake.schedule();
}

Connection* Server::next_waiting() {
    for (auto* queue : {&m_probes_waiting, &m_seats_waiting}) {
        while (!queue->empty() && !queue->front()->wants_seat()) {
            queue->pop_front();  // answered busy meanwhile (Connection::on_idle)
        }
        if (!queue->empty()) {
            return queue->front();
        }
    }
    return nullptr;
}

void Server::settle() {
    seat_waiting();
    admit();
    if (next_waiting() == nullptr && !m_waiting) {
        m_retry.stop();
    }
}

void Server::seat_waiting() {
    while (Connection* next = next_waiting()) {
        if (m_seated >= k_max_connections) {
            Connection* evicted = victim(true);
            if (evicted == nullptr) {
                retry_later();
                return;
            }
            evicted->evict();  // release() forgets it: a seat is free
            continue;
        }
        (next->probe_waiting() ? m_probes_waiting : m_seats_waiting).pop_front();
        ++m_seated;
        next->seat();  // may close it (release() counts the seat back)
    }
}

void Server::admit() {
    if (!m_waiting) {
        return;
    }
    if (m_connections.size() - m_seated >= k_max_lobby) {
        Connection* evicted = victim(false);
        if (evicted == nullptr) {
            // libuv keeps the connection and stops polling until we accept.
            retry_later();
            return;
        }
        evicted->evict();
    }
    try {
        auto connection = std::make_unique<Connection>(*this, m_loop);
        int rc = uv_accept(m_listener.as_stream(), connection->stream());
        m_waiting = false;
        if (rc != 0) {
            return;
        }
        int send_buffer = k_lobby_send_buffer_bytes;
        (void)uv_send_buffer_size(connection->handle(), &send_buffer);
        m_connections.push_back(std::move(connection));
        m_connections.back()->start();
    } catch (...) {
        // Out of memory: the client waits in the backlog for the next try.
        retry_later();
    }
}

void Server::retry_later() {
    const std::uint64_t now = uv_now(m_loop);
    std::uint64_t at = now + k_retry_ms;
    for (const auto& connection : m_connections) {
        if (auto change = connection->evictable_change()) {
            at = std::min(at, std::max(*change, now + 1));
        }
    }
    m_retry.start(at - now, [this] { settle(); });
}

void Server::release(Connection* connection) {
    std::erase(m_deferred, connection);
    std::erase(m_probes_waiting, connection);
    std::erase(m_seats_waiting, connection);
    auto it = std::ranges::find_if(m_connections,
                                   [&](const auto& owned) { return owned.get() == connection; });
    if (it != m_connections.end()) {
        m_seated -= (*it)->seated() ? 1 : 0;
        m_connections.erase(it);
    }
    m_wake.schedule();
}

// uv_now is the same for every callback of one poll: a new value is a new turn.
bool Server::may_send() {
    const std::uint64_t now = uv_now(m_loop);
    if (now != m_send_turn_ms) {
        m_send_turn_ms = now;
        m_send_spent_ns = 0;
    }
    return m_send_spent_ns == 0 || m_send_spent_ns < m_send_slice_ns;
}

void Server::defer(Connection* connection) {
    ++m_deferrals;
    m_deferred.push_back(connection);
    m_send_next.schedule();
}

void Server::resume_sends() {
    m_send_turn_ms = uv_now(m_loop);
    m_send_spent_ns = 0;
    // A connection may close, or evict another, as it goes on: each is looked up first.
    std::vector<Connection*> waiting;
    waiting.swap(m_deferred);
    for (Connection* connection : waiting) {
        const bool open = std::ranges::any_of(
            m_connections, [&](const auto& owned) { return owned.get() == connection; });
        if (open) {
            connection->send_more();
        }
    }
}

}  // namespace pkit::shell::http
