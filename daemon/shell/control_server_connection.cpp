#include "daemon/shell/control_server_connection.hpp"

#include <malloc.h>

#include <memory>
#include <utility>

#include "proto/reply.hpp"

namespace pkit::shell {
namespace {

// Bytes of shared read buffer handed to libuv per read.
constexpr std::size_t k_read_chunk = 64 * 1024;

// An input buffer this large or larger is released once empty, so a connection that
// once sent a big request does not keep the memory while idle.
constexpr std::size_t k_keep_input_capacity = 4096;

// A written reply at least this large is followed by malloc_trim: glibc raises its mmap
// threshold after freeing such a block, so the next ones come from the heap, whose freed
// top it keeps; a status of a thousand services would leave ~1 MiB resident for good.
constexpr std::size_t k_trim_after_bytes = 256 * 1024;

// How much a finishing client may still send before pkitd stops reading it (the rest of
// a too-large line, say); the time bound is ControlServer::k_linger_ms.
constexpr std::size_t k_linger_bytes = 4 * 1024 * 1024;

// A write owns its bytes until libuv is done with them.
struct WriteRequest {
    uv_write_t request{};
    std::string data;
};

}  // namespace

ControlServer::Connection::Connection(ControlServer& server, ConnectionId id)
    : m_server(server), m_id(id), m_pipe(this) {
    m_pipe.init(uv_pipe_init, server.m_loop, 0);
}

int ControlServer::Connection::accept(uv_stream_t* listener) {
    return uv_accept(listener, m_pipe.as_stream());
}

int ControlServer::Connection::fd() const {
    uv_os_fd_t fd = -1;
    uv_fileno(m_pipe.as_handle(), &fd);
    return fd;
}

void ControlServer::Connection::serve() {
    m_served = true;
    update_reading();
}

void ControlServer::Connection::refuse(std::string line) {
    if (write(std::move(line))) {
        finish();
    }
}

void ControlServer::Connection::reply(std::string line) {
    if (m_closed || !m_busy) {
        return;
    }
    m_busy = false;
    if (write(std::move(line))) {
        pump();
    }
}

bool ControlServer::Connection::send(std::string line) {
    if (m_closed || m_finishing) {
        return false;
    }
    return write(std::move(line), true);
}

std::size_t ControlServer::Connection::backlog() const {
    return m_closed ? 0 : uv_stream_get_write_queue_size(m_pipe.as_stream());
}

bool ControlServer::Connection::backlogged() const {
    return backlog() > m_server.m_options.max_backlog_bytes / 4;
}

void ControlServer::Connection::start_stream() {
    if (m_closed) {
        return;
    }
    m_streaming = true;
    m_input = std::string();
    m_start = 0;
    m_scanned = 0;
}

void ControlServer::Connection::close() {
    if (m_closed) {
        return;
    }
    drop();
    m_server.retire(m_id, m_served);
}

void ControlServer::Connection::drop() {
    m_closed = true;
    m_reading = false;
    m_pipe.reset();
    m_input = std::string();
}

void ControlServer::Connection::on_alloc(uv_handle_t* handle, std::size_t, uv_buf_t* buffer) {
    auto* self = static_cast<Connection*>(handle->data);
    if (self == nullptr) {
        *buffer = uv_buf_init(nullptr, 0);
        return;
    }
    *buffer = uv_buf_init(self->m_server.m_read_buffer.get(), k_read_chunk);
}

void ControlServer::Connection::on_read(uv_stream_t* stream, ssize_t nread,
                                        const uv_buf_t* buffer) {
    auto* self = static_cast<Connection*>(stream->data);
    if (self == nullptr) {
        return;
    }
    try {
        if (nread > 0) {
            self->on_data(buffer->base, static_cast<std::size_t>(nread));
        } else if (nread == UV_EOF) {
            self->on_eof();
        } else if (nread < 0) {
            self->close();
        }
    } catch (...) {
        // Only allocation failure can get here: give up this client, not pkitd.
        self->close();
    }
}

void ControlServer::Connection::on_write(uv_write_t* request, int status) {
    auto* self = static_cast<Connection*>(request->handle->data);
    std::unique_ptr<WriteRequest> owned(reinterpret_cast<WriteRequest*>(request));
    if (owned->data.size() >= k_trim_after_bytes) {
        owned.reset();
        malloc_trim(0);
    }
    if (self == nullptr) {
        return;
    }
    try {
        if (status < 0) {
            self->close();  // the client went away (EPIPE, ECONNRESET)
        } else if (self->m_paused && !self->backlogged()) {
            // The client has read enough: handle its next requests.
            self->pump();
        }
    } catch (...) {
        self->close();  // only allocation failure gets here
    }
}

void ControlServer::Connection::on_shutdown(uv_shutdown_t* request, int status) {
    std::unique_ptr<uv_shutdown_t> owned(request);
    auto* self = static_cast<Connection*>(request->handle->data);
    if (self == nullptr) {
        return;
    }
    try {
        if (status < 0) {
            self->close();
        } else {
            self->on_shut_down();
        }
    } catch (...) {
        self->close();  // only allocation failure gets here
    }
}

void ControlServer::Connection::on_shut_down() {
    m_shut_down = true;
    if (m_eof || !m_reading) {
        close();
    } else {
        m_server.linger(m_id);
    }
}

void ControlServer::Connection::on_data(const char* data, std::size_t size) {
    if (m_finishing) {
        m_discarded += size;
        if (m_discarded > k_linger_bytes) {
            close();
        }
        return;
    }
    if (m_streaming || !m_served) {
        return;  // a streaming client's further input means nothing (SPEC §9)
    }
    m_input.append(data, size);
    pump();
}

void ControlServer::Connection::on_eof() {
    m_eof = true;
    m_reading = false;  // libuv stops reading by itself at EOF
    if (!m_finishing) {
        pump();
    } else if (m_shut_down) {
        close();  // it lingered until now
    }
}

void ControlServer::Connection::pump() {
    if (m_pumping || m_closed) {
        return;
    }
    m_pumping = true;
    std::string line;
    // A client that pipelines requests with big replies (status of a thousand services)
    // faster than it reads them is paused, not dropped: its next request waits until
    // on_write finds the backlog below the mark again.
    m_paused = false;
    while (!m_closed && !m_busy && !m_streaming && !m_finishing) {
        if (backlogged()) {
            m_paused = true;
            break;
        }
        if (!next_line(line)) {
            break;
        }
        handle_line(line);
    }
    m_pumping = false;
    if (m_closed || m_finishing) {
        return;
    }
    if (!m_busy && !m_paused && m_eof) {
        finish();  // every request the client sent has its reply
        return;
    }
    update_reading();
}

bool ControlServer::Connection::next_line(std::string& line) {
    auto newline = m_input.find('\n', std::max(m_start, m_scanned));
    std::size_t end = newline == std::string::npos ? m_input.size() : newline;
    if (end - m_start > proto::k_max_line_bytes) {
        write(proto::error_reply(nullptr, proto::ErrorCode::too_large,
                                 "a request line may hold at most 1048576 bytes"));
        finish();
        return false;
    }
    if (newline == std::string::npos) {
        m_scanned = m_input.size();
        if (!m_eof || m_start == m_input.size()) {
            return false;
        }
        // The client shut down after a last line without its newline: take it as is.
    }
    line.assign(m_input, m_start, end - m_start);
    m_start = newline == std::string::npos ? m_input.size() : newline + 1;
    m_scanned = m_start;
    if (m_start == m_input.size()) {
        if (m_input.capacity() > k_keep_input_capacity) {
            m_input = std::string();
        } else {
            m_input.clear();
        }
        m_start = m_scanned = 0;
    } else if (m_start > m_input.size() / 2) {
        m_input.erase(0, m_start);
        m_scanned -= m_start;
        m_start = 0;
    }
    return true;
}

void ControlServer::Connection::handle_line(std::string_view line) {
    auto request = proto::parse_request(line);
    if (!request) {
        write(proto::error_reply(request.error()));
        return;
    }
    m_busy = true;
    proto::json id = request->id;
    try {
        m_server.m_handler.on_request(m_id, std::move(*request));
    } catch (...) {
        // A handler bug must not take pkitd down; the client still gets its one reply.
        if (!m_closed && m_busy) {
            m_busy = false;
            write(proto::error_reply(id, proto::ErrorCode::bad_request,
                                     "pkitd failed to handle this request"));
        }
    }
}

void ControlServer::Connection::update_reading() {
    // While a request waits for its reply, read ahead only one line's worth: a client
    // pipelining without end is held back by the kernel, not by pkitd's memory.
    // A paused client is not read either: its requests wait in the kernel's buffer.
    bool want_requests =
        m_served && !m_paused && (!m_busy || m_input.size() - m_start <= proto::k_max_line_bytes);
    // A finishing connection is read until the client's end of file, only to discard.
    bool want = !m_eof && (m_finishing || want_requests);
    if (want && !m_reading) {
        m_reading = uv_read_start(m_pipe.as_stream(), &on_alloc, &on_read) == 0;
    } else if (!want && m_reading) {
        uv_read_stop(m_pipe.as_stream());
        m_reading = false;
    }
}

bool ControlServer::Connection::write(std::string line, bool bounded) {
    if (m_closed) {
        return false;
    }
    // Replies need no bound here: requests are handled only below the pause mark, so a
    // reply backlog stays under the mark plus one reply. Stream lines come whether the
    // client reads or not: one larger than the bound may go out on an idle connection,
    // a backlog that keeps growing may not.
    std::size_t queued = backlog();
    if (bounded && queued > 0 && queued + line.size() > m_server.m_options.max_backlog_bytes) {
        close();
        return false;
    }
    auto request = std::make_unique<WriteRequest>();
    request->data = std::move(line);
    uv_buf_t buffer = uv_buf_init(request->data.data(), request->data.size());
    if (uv_write(&request->request, m_pipe.as_stream(), &buffer, 1, &on_write) != 0) {
        close();
        return false;
    }
    request.release();  // on_write owns it now
    return true;
}

void ControlServer::Connection::finish() {
    if (m_finishing || m_closed) {
        return;
    }
    m_finishing = true;
    update_reading();
    m_input = std::string();
    m_start = m_scanned = 0;
    auto request = std::make_unique<uv_shutdown_t>();
    if (uv_shutdown(request.get(), m_pipe.as_stream(), &on_shutdown) != 0) {
        close();
        return;
    }
    request.release();  // on_shutdown owns it now
}

}  // namespace pkit::shell
