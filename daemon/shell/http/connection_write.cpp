// Connection's writing side: replies queued in libuv, a /metrics body by sendfile(2)
// within the Server's budget a turn, the watch over a client that takes nothing, and
// the end of a connection (finish, linger).

#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "daemon/shell/http/connection.hpp"
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

}  // namespace

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

std::size_t Connection::kernel_queued() const {
    int fd = -1;
    int queued = 0;
    if (uv_fileno(m_tcp.as_handle(), &fd) != 0 || ::ioctl(fd, SIOCOUTQ, &queued) != 0) {
        return 0;
    }
    return static_cast<std::size_t>(queued);
}

void Connection::look() const {
    const std::size_t queued = kernel_queued();
    if (queued < m_queued_mark) {
        m_progress_ms = uv_now(m_loop);  // the client took bytes the kernel held
    }
    m_queued_mark = queued;
}

void Connection::watch_output() {
    if (unsent() == 0) {
        m_stall_timer.stop();
        return;
    }
    if (m_stall_timer.active()) {
        return;
    }
    m_queued_mark = kernel_queued();
    // Every k_look_ms while replies wait for room: whether the client has taken bytes
    // from the kernel's buffer (which pkitd's own writes do not show until half of it
    // is free); closed once it has taken nothing for k_stall_ms. (Eviction judges by
    // the same m_progress_ms, k_stalled_ms after the last byte taken; a client waiting
    // for a seat finds such a connection through the Server's retry.)
    m_stall_timer.start(
        k_look_ms,
        [this] {
            look();
            if (uv_now(m_loop) - m_progress_ms >= k_stall_ms) {
                close();
            }
        },
        k_look_ms);
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
    m_timer.start(k_idle_ms, [this] { on_idle(); });
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

}  // namespace pkit::shell::http
