#include "daemon/shell/control/control_server.hpp"

#include <malloc.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/shell/control/control_server_connection.hpp"
#include "daemon/shell/control/control_server_socket.hpp"
#include "proto/reply.hpp"

namespace pkit::shell {
namespace {

// Allocated uninitialised: only what reads fill becomes resident (zeroing it
// kept 64 KiB of pkitd's heap resident for nothing).
constexpr std::size_t k_read_buffer_bytes = 64 * 1024;

std::string uv_text(int status) {
    return uv_strerror(status);
}

}  // namespace

ControlServer::ControlServer(uv_loop_t* loop, SocketOptions options, ControlHandler& handler)
    : m_loop(loop),
      m_options(std::move(options)),
      m_handler(handler),
      m_self(::geteuid()),
      m_listener(this),
      m_reaper(loop),
      m_linger_timer(loop),
      m_read_buffer(std::make_unique_for_overwrite<char[]>(k_read_buffer_bytes)) {}

std::expected<std::unique_ptr<ControlServer>, std::string> ControlServer::open(
    uv_loop_t* loop, SocketOptions options, ControlHandler& handler) {
    // libuv writes with write(2), not send(MSG_NOSIGNAL): a client that vanishes with
    // output pending would raise SIGPIPE and kill pkitd. pkitd ignores it anyway; doing
    // it here too keeps the server safe in any process (tests included). Children get
    // default dispositions back from the launcher.
    ::signal(SIGPIPE, SIG_IGN);
    if (auto prepared = control_socket::prepare_path(options.path); !prepared) {
        return std::unexpected(prepared.error());
    }
    std::unique_ptr<ControlServer> server(new ControlServer(loop, std::move(options), handler));
    const std::string& path = server->m_options.path;
    if (int rc = server->m_listener.init(uv_pipe_init, loop, 0); rc != 0) {
        return std::unexpected("cannot create the control socket: " + uv_text(rc));
    }
    // The socket is born 0600 so that nobody can connect in the moment before its
    // final mode is set. pkitd is single-threaded here, so the umask dance is safe.
    mode_t previous_umask = ::umask(0177);
    int rc = uv_pipe_bind(server->m_listener.get(), path.c_str());
    ::umask(previous_umask);
    if (rc != 0) {
        return std::unexpected("cannot bind " + path + ": " + uv_text(rc));
    }
    server->m_listening = true;  // from here on, close_all() removes the file
    if (auto moded = control_socket::apply_mode(server->m_options); !moded) {
        server->close_all();
        return std::unexpected(moded.error());
    }
    rc = uv_listen(server->m_listener.as_stream(), SOMAXCONN, &ControlServer::on_connection);
    if (rc != 0) {
        server->close_all();
        return std::unexpected("cannot listen on " + path + ": " + uv_text(rc));
    }
    return server;
}

std::expected<std::unique_ptr<ControlServer>, std::string> ControlServer::adopt(
    uv_loop_t* loop, SocketOptions options, ControlHandler& handler, int fd) {
    ::signal(SIGPIPE, SIG_IGN);
    std::unique_ptr<ControlServer> server(new ControlServer(loop, std::move(options), handler));
    if (int rc = server->m_listener.init(uv_pipe_init, loop, 0); rc != 0) {
        return std::unexpected("cannot create the control socket: " + uv_text(rc));
    }
    if (int rc = uv_pipe_open(server->m_listener.get(), fd); rc != 0) {
        return std::unexpected("cannot take over the control socket: " + uv_text(rc));
    }
    server->m_listening = true;
    int rc = uv_listen(server->m_listener.as_stream(), SOMAXCONN, &ControlServer::on_connection);
    if (rc != 0) {
        server->close_all();
        return std::unexpected("cannot listen on " + server->m_options.path + ": " + uv_text(rc));
    }
    return server;
}

int ControlServer::listener_fd() const {
    uv_os_fd_t fd = -1;
    if (!m_listener.initialized() ||
        uv_fileno(reinterpret_cast<const uv_handle_t*>(m_listener.get()), &fd) != 0) {
        return -1;
    }
    return fd;
}

ControlServer::~ControlServer() {
    close_all();
}

void ControlServer::on_connection(uv_stream_t* listener, int status) {
    auto* self = static_cast<ControlServer*>(listener->data);
    if (self == nullptr || status < 0) {
        return;
    }
    try {
        self->accept_one();
    } catch (...) {
        // Out of memory for one more client: it is refused by the kernel's backlog
        // filling up, and pkitd carries on.
    }
}

void ControlServer::accept_one() {
    ConnectionId id = m_next_id++;
    auto connection = std::make_unique<Connection>(*this, id);
    if (connection->accept(m_listener.as_stream()) != 0) {
        return;
    }
    bool need_groups = m_options.allowed_gid.has_value();
    auto peer = control_socket::read_peer_credentials(connection->fd(), need_groups);
    bool allowed = peer && is_authorized(*peer, m_options, m_self);
    Connection& added = *connection;
    m_connections.emplace(id, std::move(connection));
    if (allowed) {
        added.serve();
        return;
    }
    std::string who = peer ? "uid " + std::to_string(peer->uid) : "an unknown peer";
    added.refuse(proto::error_reply(nullptr, proto::ErrorCode::forbidden,
                                    who + " may not use this control socket"));
}

ControlServer::Connection* ControlServer::find(ConnectionId id) {
    auto it = m_connections.find(id);
    return it == m_connections.end() ? nullptr : it->second.get();
}

std::size_t ControlServer::backlog_bytes(ConnectionId id) const {
    auto it = m_connections.find(id);
    return it == m_connections.end() ? 0 : it->second->backlog();
}

void ControlServer::reply(ConnectionId connection, std::string line) {
    if (auto* found = find(connection)) {
        found->reply(std::move(line));
    }
}

void ControlServer::reply_and_end(ConnectionId connection, std::string line) {
    if (auto* found = find(connection)) {
        found->reply_and_end(std::move(line));
    }
}

bool ControlServer::send(ConnectionId connection, std::string line) {
    return send(connection, nullptr, std::make_shared<const std::string>(std::move(line)));
}

bool ControlServer::send(ConnectionId connection, SharedText head, SharedText body) {
    auto* found = find(connection);
    return found != nullptr && found->send(std::move(head), std::move(body));
}

void ControlServer::start_stream(ConnectionId connection) {
    if (auto* found = find(connection)) {
        found->start_stream();
    }
}

void ControlServer::retire(ConnectionId id, bool notify) {
    auto it = m_connections.find(id);
    if (it == m_connections.end()) {
        return;
    }
    m_retired.push_back(std::move(it->second));
    m_connections.erase(it);
    if (notify) {
        m_gone.push_back(id);
    }
    if (!m_reaper.active()) {
        m_reaper.start(0, [this] { reap(); });
    }
}

std::expected<void, std::string> ControlServer::set_access(std::vector<uid_t> allowed_uids,
                                                           std::optional<gid_t> allowed_gid) {
    m_options.allowed_uids = std::move(allowed_uids);
    m_options.allowed_gid = allowed_gid;
    if (!m_listening) {
        return {};
    }
    return control_socket::apply_mode(m_options);
}

void ControlServer::linger(ConnectionId id) {
    m_lingering.emplace_back(uv_now(m_loop) + k_linger_ms, id);
    if (!m_linger_timer.active()) {
        m_linger_timer.start(k_linger_ms, [this] { end_lingering(); });
    }
}

void ControlServer::end_lingering() {
    const std::uint64_t now = uv_now(m_loop);
    while (!m_lingering.empty() && m_lingering.front().first <= now) {
        ConnectionId id = m_lingering.front().second;
        m_lingering.pop_front();
        if (auto* connection = find(id)) {
            connection->close();
        }
    }
    if (!m_lingering.empty()) {
        m_linger_timer.start(m_lingering.front().first - now, [this] { end_lingering(); });
    }
}

void ControlServer::reap() {
    auto retired = std::move(m_retired);
    auto gone = std::move(m_gone);
    m_retired.clear();
    m_gone.clear();
    retired.clear();
    if (std::exchange(m_trim_owed, false)) {
        // A large queue is gone (its cancelled write freed its pieces when the pipe
        // closed, before this timer ran): give the memory back to the system.
        malloc_trim(0);
    }
    for (ConnectionId id : gone) {
        try {
            m_handler.on_disconnect(id);
        } catch (...) {
            // The connection is gone either way; the handler's bug stays its own.
        }
    }
}

void ControlServer::close_all() {
    if (m_listener.initialized()) {
        m_listener.reset();
    }
    if (m_listening) {
        m_listening = false;
        ::unlink(m_options.path.c_str());
    }
    for (auto& [id, connection] : m_connections) {
        connection->drop();
        m_retired.push_back(std::move(connection));
    }
    m_connections.clear();
    m_lingering.clear();
    m_linger_timer.stop();
    if (!m_retired.empty() && !m_reaper.active()) {
        m_reaper.start(0, [this] { reap(); });
    }
}

}  // namespace pkit::shell
