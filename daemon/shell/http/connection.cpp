#include "daemon/shell/http/connection.hpp"

#include <sys/ioctl.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <string>
#include <vector>

#include "daemon/shell/http/router.hpp"
#include "daemon/shell/http/server.hpp"

namespace pkit::shell::http {

namespace {

Connection* owner_of(uv_stream_t* stream) {
    return static_cast<Connection*>(stream->data);
}

// The Date of a reply written now (the wall clock: it is for display).
std::string now_date() {
    return http_date(static_cast<long long>(std::time(nullptr)));
}

// The answer to a request that found no seat in time (connection.hpp).
std::string busy_reply() {
    Response response{503, "text/plain; charset=utf-8",
                      "busy: every connection slot is taken by a reply; try again\n", true};
    response.date = now_date();
    return serialize(response, false, false, 1);
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
    m_timer.start(k_idle_ms, [this] { on_idle(); });
    read(true);
}

void Connection::on_idle() {
    if (!m_held) {
        close();
        return;
    }
    // Its request waited k_idle_ms for a seat: answered busy, not left hanging.
    m_held.reset();
    queue(busy_reply());
    finish();
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
            // One buffer for every connection: on_read copies what it gets before
            // libuv reads for another.
            auto* self = static_cast<Connection*>(handle->data);
            *buf = self != nullptr ? self->m_server.read_buffer() : uv_buf_init(nullptr, 0);
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
        if (unsent() > 0 && now - m_progress_ms >= k_stalled_ms) {
            look();  // the client may have taken bytes since the last look
        }
        const bool stuck = unsent() > 0 && now - m_progress_ms >= k_stalled_ms;
        return stuck ? Eviction::stalled : Eviction::mid_reply;
    }
    if (m_held) {
        return Eviction::waiting;
    }
    if (m_seated) {
        return Eviction::idle;  // between requests, or the next one trickling in
    }
    if (m_accepted_ms == now) {
        return Eviction::mid_reply;
    }
    return !m_heard && now - m_accepted_ms < k_fresh_ms ? Eviction::fresh : Eviction::idle;
}

std::optional<std::uint64_t> Connection::evictable_change() const {
    switch (evictable()) {
        case Eviction::mid_reply:
            if (m_metrics_ticket == 0 && (m_writes > 0 || m_finishing || m_file)) {
                if (unsent() > 0) {
                    return m_progress_ms + k_stalled_ms;
                }
                return std::nullopt;  // written: its callback comes
            }
            return m_metrics_ticket == 0 ? std::optional(m_accepted_ms + 1) : std::nullopt;
        case Eviction::fresh:
            return m_accepted_ms + k_fresh_ms;
        default:
            return std::nullopt;
    }
}

bool Connection::request_waiting() const {
    int waiting = 0;
    int fd = -1;
    return uv_fileno(m_tcp.as_handle(), &fd) == 0 && ::ioctl(fd, FIONREAD, &waiting) == 0 &&
           waiting > 0;
}

std::uint64_t Connection::since() const {
    switch (evictable()) {
        case Eviction::stalled:
            return m_progress_ms;
        case Eviction::waiting:
            return m_held_since_ms;
        case Eviction::fresh:
            return m_accepted_ms;
        default:
            return m_idle_since_ms;
    }
}

void Connection::seat() {
    m_seated = true;
    int send_buffer = k_send_buffer_bytes;
    (void)uv_send_buffer_size(handle(), &send_buffer);
    try {
        m_timer.start(k_idle_ms, [this] { on_idle(); });
        if (m_held) {
            Request request = std::move(*m_held);
            m_held.reset();
            take(request);
        }
        pump();
    } catch (...) {
        close();
    }
}

void Connection::evict() {
    if (m_held && uv_stream_get_write_queue_size(m_tcp.as_stream()) == 0) {
        // Its request is answered, not dropped: busy. A few hundred bytes into an
        // empty socket buffer; whatever does not fit is lost with the connection.
        std::string reply = busy_reply();
        uv_buf_t buf = uv_buf_init(reply.data(), static_cast<unsigned>(reply.size()));
        (void)uv_try_write(m_tcp.as_stream(), &buf, 1);
    }
    close();
}

void Connection::on_read(ssize_t nread, const uv_buf_t* buf) {
    if (nread < 0) {
        // End of file or an error. A client that shut down its writing side still
        // gets the answers to the requests it sent.
        if (nread == UV_EOF && !m_lingering && !m_finishing) {
            m_client_done = true;
            read(false);
            if (m_writes == 0 && m_metrics_ticket == 0 && !m_file && m_stash.empty() && !m_held) {
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
        m_timer.start(k_idle_ms, [this] { on_idle(); });
        m_stash.append(buf->base, static_cast<std::size_t>(nread));
        pump();
    } catch (...) {
        close();  // never into libuv; the connection goes, pkitd stays
    }
}

bool Connection::blocked() const {
    return m_held || m_metrics_ticket != 0 || m_file ||
           unsent() > (m_seated ? k_max_unsent_bytes : k_lobby_unsent_bytes);
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
            take(requests.front());
            continue;  // blocked while it waits for a seat
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

bool Connection::take(const Request& request) {
    if (!m_seated && !answers_unseated(request)) {
        m_held = request;
        m_held_since_ms = uv_now(m_loop);
        m_server.want_seat(this);
        return false;
    }
    answer(request);
    if (!request.keep_alive) {
        finish();
    }
    return true;
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

void Connection::close() {
    m_server.release(this);  // destroys this connection: nothing may follow
}

}  // namespace pkit::shell::http
