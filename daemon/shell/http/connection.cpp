#include "daemon/shell/http/connection.hpp"

#include <sys/ioctl.h>

#include <ctime>
#include <string>
#include <vector>

#include "daemon/shell/http/router.hpp"
#include "daemon/shell/http/server.hpp"

namespace pkit::shell::http {

namespace {

// A reply's bytes: its head, and the shared /metrics body when it has one.
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
    if (m_writes > 0 || m_finishing) {
        return m_stalled_since_ms != 0 ? Eviction::stalled : Eviction::mid_reply;
    }
    if (m_accepted_ms == uv_now(m_loop)) {
        return Eviction::mid_reply;
    }
    return Eviction::idle;
}

bool Connection::request_waiting() const {
    int waiting = 0;
    int fd = -1;
    return uv_fileno(m_tcp.as_handle(), &fd) == 0 && ::ioctl(fd, FIONREAD, &waiting) == 0 &&
           waiting > 0;
}

std::uint64_t Connection::since() const {
    return evictable() == Eviction::stalled ? m_stalled_since_ms : m_idle_since_ms;
}

void Connection::on_read(ssize_t nread, const uv_buf_t* buf) {
    if (nread < 0) {
        // End of file or an error. A client that shut down its writing side still
        // gets the answers to the requests it sent.
        if (nread == UV_EOF && !m_lingering && !m_finishing) {
            m_client_done = true;
            read(false);
            if (m_writes == 0 && m_metrics_ticket == 0 && m_stash.empty()) {
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
        m_timer.start(k_idle_ms, [this] { close(); });
        m_stash.append(buf->base, static_cast<std::size_t>(nread));
        pump();
    } catch (...) {
        close();  // never into libuv; the connection goes, pkitd stays
    }
}

bool Connection::blocked() const {
    return m_metrics_ticket != 0 ||
           uv_stream_get_write_queue_size(m_tcp.as_stream()) > k_max_unsent_bytes;
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
    auto* write = new WriteRequest;
    write->head = std::move(head);
    write->body = std::move(body);
    uv_buf_t bufs[2] = {uv_buf_init(write->head.data(), static_cast<unsigned>(write->head.size())),
                        uv_buf_init(nullptr, 0)};
    unsigned count = 1;
    if (write->body && !write->body->empty()) {
        // libuv only reads the body's bytes: the const_cast never writes through.
        bufs[1] = uv_buf_init(const_cast<char*>(write->body->data()),
                              static_cast<unsigned>(write->body->size()));
        count = 2;
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
        m_finishing = true;  // the stream is broken: finish() closes once writes drain
        return;
    }
    ++m_writes;
}

void Connection::watch_output() {
    const std::size_t unsent = uv_stream_get_write_queue_size(m_tcp.as_stream());
    if (unsent <= k_max_unsent_bytes) {
        if (m_stalled_since_ms != 0) {
            m_stalled_since_ms = 0;
            m_stall_timer.stop();
        }
        return;
    }
    if (m_stalled_since_ms != 0) {
        return;
    }
    m_stalled_since_ms = uv_now(m_loop);
    m_stall_mark = unsent;
    // Every k_stall_ms: closed unless the client took some of it meanwhile.
    m_stall_timer.start(
        k_stall_ms,
        [this] {
            const std::size_t now = uv_stream_get_write_queue_size(m_tcp.as_stream());
            if (now >= m_stall_mark) {
                close();
                return;
            }
            m_stall_mark = now;
        },
        k_stall_ms);
    m_server.wake();  // a stalled connection can give its slot to a waiting client
}

void Connection::on_written(int status) {
    --m_writes;
    if (status < 0) {
        close();
        return;
    }
    if (m_finishing) {
        if (m_writes == 0 && m_metrics_ticket == 0) {
            linger();
        }
        return;
    }
    m_timer.start(k_idle_ms, [this] { close(); });
    if (m_writes == 0) {
        m_idle_since_ms = uv_now(m_loop);
    }
    if (m_metrics_ticket == 0) {
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
    if (m_writes == 0 && m_metrics_ticket == 0) {
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
