#include "daemon/shell/http/connection.hpp"

#include <string>
#include <vector>

#include "daemon/shell/http/router.hpp"
#include "daemon/shell/http/server.hpp"

namespace pkit::shell::http {

namespace {

struct WriteRequest {
    uv_write_t req{};
    std::string bytes;
};

Connection* owner_of(uv_stream_t* stream) {
    return static_cast<Connection*>(stream->data);
}

}  // namespace

Connection::Connection(Server& server, uv_loop_t* loop)
    : m_server(server), m_tcp(this), m_timer(loop) {
    m_tcp.init(uv_tcp_init, loop);
}

// The handles close with their owners; pending writes come back cancelled to
// callbacks that find no owner any more and only free their request.
Connection::~Connection() = default;

void Connection::start() {
    m_timer.start(k_idle_ms, [this] { close(); });
    m_reading = true;
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

void Connection::on_read(ssize_t nread, const uv_buf_t* buf) {
    if (nread < 0) {
        // End of file or an error. A client that shut down its writing side still
        // gets the answers already queued.
        if (m_writes > 0 && !m_lingering && nread == UV_EOF) {
            uv_read_stop(m_tcp.as_stream());
            m_reading = false;
            m_finishing = true;
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
        std::vector<Request> requests;
        auto error =
            m_parser.feed(std::string_view(buf->base, static_cast<std::size_t>(nread)), requests);
        for (const Request& request : requests) {
            answer(request);
            if (!request.keep_alive) {
                finish();
                return;
            }
        }
        if (error) {
            fail(*error);
            return;
        }
        if (uv_stream_get_write_queue_size(m_tcp.as_stream()) > k_max_queued_bytes) {
            uv_read_stop(m_tcp.as_stream());
            m_reading = false;
        }
    } catch (...) {
        close();  // never into libuv; the connection goes, pkitd stays
    }
}

void Connection::answer(const Request& request) {
    Response response;
    try {
        response = route(request, m_server.sources());
    } catch (...) {
        response = Response{500, "text/plain; charset=utf-8", "internal error\n", false};
    }
    send(serialize(response, request.keep_alive, request.method == "HEAD", request.version_minor));
}

void Connection::fail(const ParseError& error) {
    Response response{error.status, "text/plain; charset=utf-8", error.message + "\n", true};
    send(serialize(response, false, false, 1));
    finish();
}

void Connection::send(std::string bytes) {
    auto* write = new WriteRequest;
    write->bytes = std::move(bytes);
    uv_buf_t buf = uv_buf_init(write->bytes.data(), static_cast<unsigned>(write->bytes.size()));
    int rc = uv_write(&write->req, m_tcp.as_stream(), &buf, 1, [](uv_write_t* req, int status) {
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

void Connection::on_written(int status) {
    --m_writes;
    if (status < 0) {
        close();
        return;
    }
    if (m_finishing) {
        if (m_writes == 0) {
            linger();
        }
        return;
    }
    m_timer.start(k_idle_ms, [this] { close(); });
    if (!m_reading && uv_stream_get_write_queue_size(m_tcp.as_stream()) <= k_max_queued_bytes) {
        m_reading = true;
        start();
    }
}

void Connection::finish() {
    m_finishing = true;
    if (m_writes == 0) {
        linger();
    }
}

void Connection::linger() {
    if (m_lingering) {
        return;
    }
    m_lingering = true;
    auto* req = new uv_shutdown_t{};
    if (uv_shutdown(req, m_tcp.as_stream(), [](uv_shutdown_t* r, int) { delete r; }) != 0) {
        delete req;
        close();
        return;
    }
    if (!m_reading) {
        start();  // drains the client until its end of file
    }
    m_timer.start(k_linger_ms, [this] { close(); });
}

void Connection::close() {
    m_server.release(this);  // destroys this connection: nothing may follow
}

}  // namespace pkit::shell::http
