#include "daemon/shell/http/connection.hpp"

#include <sys/ioctl.h>
#include <sys/sendfile.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <string>
#include <vector>

#include "daemon/shell/http/router.hpp"
#include "daemon/shell/http/server.hpp"

namespace pkit::shell::http {

namespace {

// A reply's bytes in libuv's queue: its head, and bytes of the shared /metrics body
// (which `body` keeps alive) when it has one.
struct WriteRequest {
    uv_write_t req{};
    std::string head;
    MetricsCache::Body body;
};

Connection* owner_of(uv_stream_t* stream) {
    return static_cast<Connection*>(stream->data);
}

// The Date of a reply written now (the wall clock: it is for display).
std::string now_date() {
    return http_date(static_cast<long long>(std::time(nullptr)));
}

}  // namespace

Connection::Connection(Server& server, uv_loop_t* loop)
    : m_server(server),
      m_loop(loop),
      m_tcp(this),
      m_timer(loop),
      m_head_timer(loop),
      m_stall_timer(loop) {
    m_tcp.init(uv_tcp_init, loop);
    m_accepted_ms = m_idle_since_ms = uv_now(loop);
}

// The handles close with their owners; pending writes come back cancelled to
// callbacks that find no owner any more and only free their request.
Connection::~Connection() {
    if (m_metrics_ticket != 0) {
        m_server.metrics().cancel(m_metrics_ticket);
    }
}

void Connection::start() {
    m_timer.start(k_idle_ms, [this] { close(); });
    read(true);
}

void Connection::read(bool on) {
    if (on == m_reading) {
        return;
    }
    m_reading = on;
    if (!on) {
        uv_read_stop(m_tcp.as_stream());
        return;
    }
    uv_read_start(
        m_tcp.as_stream(),
        [](uv_handle_t* handle, std::size_t, uv_buf_t* buf) {
            auto* self = static_cast<Connection*>(handle->data);
            *buf = self != nullptr ? uv_buf_init(self->m_buffer, sizeof self->m_buffer)
                                   : uv_buf_init(nullptr, 0);
        },
        [](uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) {
            if (Connection* self = owner_of(stream)) {
                self->on_read(nread, buf);
            }
        });
}

Eviction Connection::evictable() const {
    if (m_lingering) {
        return Eviction::done;
    }
    if (m_metrics_ticket != 0) {
        return Eviction::mid_reply;
    }
    const std::uint64_t now = uv_now(m_loop);
    if (m_writes > 0 || m_finishing || m_file) {
        const bool stuck = unsent() > 0 && now - m_progress_ms >= k_stalled_ms;
        return stuck ? Eviction::stalled : Eviction::mid_reply;
    }
    if (m_accepted_ms == now) {
        return Eviction::mid_reply;
    }
    return !m_heard && now - m_accepted_ms < k_fresh_ms ? Eviction::fresh : Eviction::idle;
}

bool Connection::request_waiting() const {
    int waiting = 0;
    int fd = -1;
    return uv_fileno(m_tcp.as_handle(), &fd) == 0 && ::ioctl(fd, FIONREAD, &waiting) == 0 &&
           waiting > 0;
}

std::uint64_t Connection::since() const {
    return evictable() == Eviction::stalled ? m_progress_ms : m_idle_since_ms;
}

void Connection::on_read(ssize_t nread, const uv_buf_t* buf) {
    if (nread < 0) {
        // End of file or an error. A client that shut down its writing side still
        // gets the answers to the requests it sent.
        if (nread == UV_EOF && !m_lingering && !m_finishing) {
            m_client_done = true;
            read(false);
            if (m_writes == 0 && m_metrics_ticket == 0 && !m_file && m_stash.empty()) {
                close();
                return;
            }
            try {
                pump();
            } catch (...) {
                close();
            }
            return;
        }
        if (nread == UV_EOF && m_finishing && !m_lingering) {
            read(false);  // the answers already queued are still written
            return;
        }
        close();
        return;
    }
    if (nread == 0 || m_finishing) {
        return;  // while finishing, the client's further bytes are read and dropped
    }
    try {
        m_heard = true;
        m_timer.start(k_idle_ms, [this] { close(); });
        m_stash.append(buf->base, static_cast<std::size_t>(nread));
        pump();
    } catch (...) {
        close();  // never into libuv; the connection goes, pkitd stays
    }
}

bool Connection::blocked() const {
    return m_metrics_ticket != 0 || m_file || unsent() > k_max_unsent_bytes;
}

std::size_t Connection::unsent() const {
    return uv_stream_get_write_queue_size(m_tcp.as_stream()) +
           (m_file ? m_file->size() - m_file_sent : 0);
}

void Connection::pump() {
    std::size_t at = 0;
    while (at < m_stash.size() && !m_finishing && !blocked()) {
        std::vector<Request> requests;
        auto error = m_parser.feed(std::string_view(m_stash).substr(at), requests, 1);
        at += m_parser.consumed();
        if (!requests.empty()) {
            answer(requests.front());
            if (!requests.front().keep_alive) {
                finish();
            }
            continue;
        }
        if (error) {
            fail(*error);
        }
        break;  // the rest of a request is still to come
    }
    m_stash.erase(0, at);
    if (m_client_done && !m_finishing && !blocked()) {
        finish();  // every complete request it sent is answered
    }
    if (m_finishing) {
        m_stash.clear();
        m_head_timer.stop();
        watch_output();  // its last replies may still wait for the client
        return;
    }
    if (!m_parser.in_request()) {
        m_head_timer.stop();
    } else if (!m_head_timer.active()) {
        m_head_timer.start(k_head_ms, [this] { close(); });
    }
    watch_output();
    read(!blocked() && !m_client_done);
}

void Connection::answer(const Request& request) {
    Response response;
    try {
        response = route(request, m_server.sources());
    } catch (...) {
        response = Response{500, "text/plain; charset=utf-8", "internal error\n", false};
    }
    if (response.metrics) {
        m_metrics_request = request;
        std::uint64_t ticket = 0;
        auto body = m_server.metrics().request(
            [this](MetricsCache::Body b) { on_metrics(std::move(b)); }, ticket);
        if (body) {
            on_metrics(std::move(*body));
        } else {
            m_metrics_ticket = ticket;
        }
        return;
    }
    const bool head_only = request.method == "HEAD";
    response.date = now_date();
    std::string bytes =
        serialize_head(response, response.body.size(), request.keep_alive, request.version_minor);
    if (!head_only) {
        bytes += response.body;
    }
    send(std::move(bytes));
}

void Connection::on_metrics(MetricsCache::Body body) {
    const bool waited = m_metrics_ticket != 0;
    m_metrics_ticket = 0;
    const Request& request = m_metrics_request;
    Response response;
    response.content_type = std::string(k_metrics_content_type);
    response.date = now_date();
    std::string head =
        serialize_head(response, body->size(), request.keep_alive, request.version_minor);
    if (request.method == "HEAD") {
        body.reset();
    }
    send(std::move(head), std::move(body));
    if (waited) {
        // Called by the cache: go on with the requests that waited behind this one.
        pump();
    }
}

void Connection::fail(const ParseError& error) {
    Response response{error.status, "text/plain; charset=utf-8", error.message + "\n", true};
    response.date = now_date();
    send(serialize(response, false, false, 1));
    finish();
}

void Connection::send(std::string head, MetricsCache::Body body) {
    m_progress_ms = uv_now(m_loop);
    if (!body || body->fd() < 0 || body->size() == 0) {
        std::string_view bytes = body ? body->bytes() : std::string_view();
        queue(std::move(head), std::move(body), bytes);
        return;
    }
    m_file = std::move(body);
    m_file_sent = 0;
    queue(std::move(head));
    if (m_file && uv_stream_get_write_queue_size(m_tcp.as_stream()) == 0 && !send_file()) {
        // The client is gone. Not closed here: a caller (pump) goes on with this.
        m_finishing = true;
        m_timer.start(0, [this] { close(); });
    }
}

bool Connection::send_file() {
    int socket = -1;
    if (uv_fileno(m_tcp.as_handle(), &socket) != 0) {
        m_file.reset();
        return false;
    }
    const std::size_t size = m_file->size();
    while (m_file_sent < size) {
        if (!m_server.may_send()) {
            m_waits_turn = true;  // the turn's budget is spent: send_more() goes on
            m_server.defer(this);
            return true;
        }
        auto offset = static_cast<off_t>(m_file_sent);
        const std::uint64_t begin = uv_hrtime();
        ssize_t n = ::sendfile(socket, m_file->fd(), &offset, size - m_file_sent);
        const int error = errno;
        m_server.spent(uv_hrtime() - begin);
        if (n > 0) {
            m_file_sent += static_cast<std::size_t>(n);
            m_progress_ms = uv_now(m_loop);
            continue;
        }
        if (n < 0 && error == EINTR) {
            continue;
        }
        if (n < 0 && (error == EAGAIN || error == EWOULDBLOCK)) {
            // Full: libuv writes the next bytes when there is room, and its callback
            // (on_written) comes back here for the rest.
            MetricsCache::Body body = m_file;
            std::string_view piece =
                body->bytes().substr(m_file_sent, std::min(k_wait_bytes, size - m_file_sent));
            m_file_sent += piece.size();
            if (m_file_sent == size) {
                m_file.reset();  // its last bytes are in libuv's hands
            }
            queue({}, std::move(body), piece);
            return true;
        }
        m_file.reset();  // the client is gone (EPIPE, ECONNRESET)
        return false;
    }
    m_file.reset();
    return true;
}

void Connection::queue(std::string head, MetricsCache::Body body, std::string_view piece) {
    auto* write = new WriteRequest;
    write->head = std::move(head);
    write->body = std::move(body);
    uv_buf_t bufs[2];
    unsigned count = 0;
    if (!write->head.empty()) {
        bufs[count++] = uv_buf_init(write->head.data(), static_cast<unsigned>(write->head.size()));
    }
    if (!piece.empty()) {
        // libuv only reads the body's bytes: the const_cast never writes through.
        bufs[count++] =
            uv_buf_init(const_cast<char*>(piece.data()), static_cast<unsigned>(piece.size()));
    }
    int rc = uv_write(&write->req, m_tcp.as_stream(), bufs, count, [](uv_write_t* req, int status) {
        auto* done = reinterpret_cast<WriteRequest*>(req);
        Connection* self = owner_of(req->handle);
        delete done;
        if (self != nullptr) {
            self->on_written(status);
        }
    });
    if (rc != 0) {
        delete write;
        m_file.reset();
        m_finishing = true;  // the stream is broken: finish() closes once writes drain
        return;
    }
    ++m_writes;
}

void Connection::watch_output() {
    const std::size_t unsent = this->unsent();
    if (unsent == 0) {
        m_stall_timer.stop();
        return;
    }
    if (m_stall_timer.active()) {
        return;
    }
    m_stall_mark = unsent;
    // Every k_stall_ms: closed unless the client took some of it meanwhile. (Eviction
    // judges by m_progress_ms, k_stalled_ms after the last byte taken; a client waiting
    // for a slot finds such a connection through the Server's retry.)
    m_stall_timer.start(
        k_stall_ms,
        [this] {
            const std::size_t now = this->unsent();
            if (now >= m_stall_mark) {
                close();
                return;
            }
            m_stall_mark = now;
        },
        k_stall_ms);
}

void Connection::on_written(int status) {
    --m_writes;
    if (status < 0) {
        close();
        return;
    }
    m_progress_ms = uv_now(m_loop);
    go_on();
}

void Connection::send_more() {
    m_waits_turn = false;
    go_on();
}

void Connection::go_on() {
    if (m_file && !m_waits_turn && uv_stream_get_write_queue_size(m_tcp.as_stream()) == 0 &&
        !send_file()) {
        close();
        return;
    }
    if (m_finishing) {
        if (m_writes == 0 && m_metrics_ticket == 0 && !m_file) {
            linger();
        } else {
            watch_output();
        }
        return;
    }
    m_timer.start(k_idle_ms, [this] { close(); });
    if (m_writes == 0) {
        m_idle_since_ms = uv_now(m_loop);
    }
    if (m_metrics_ticket == 0 && !m_file) {
        pump();
    } else {
        watch_output();
    }
    if (m_writes == 0) {
        m_server.wake();  // idle again: evictable for a waiting client
    }
}

void Connection::finish() {
    m_finishing = true;
    if (m_writes == 0 && m_metrics_ticket == 0 && !m_file) {
        linger();
    }
}

void Connection::linger() {
    if (m_lingering) {
        return;
    }
    m_lingering = true;
    m_stall_timer.stop();
    m_head_timer.stop();
    auto* req = new uv_shutdown_t{};
    if (uv_shutdown(req, m_tcp.as_stream(), [](uv_shutdown_t* r, int) { delete r; }) != 0) {
        delete req;
        m_timer.start(0, [this] { close(); });  // not now: a caller may go on with this
        return;
    }
    if (!m_client_done) {
        read(true);  // drains the client until its end of file
    }
    m_timer.start(m_client_done ? 0 : k_linger_ms, [this] { close(); });
    m_server.wake();
}

void Connection::close() {
    m_server.release(this);  // destroys this connection: nothing may follow
}

}  // namespace pkit::shell::http
