#include "daemon/shell/control/control_server_connection.hpp"

#include <malloc.h>

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "proto/reply.hpp"

namespace pkit::shell {
namespace {

// Bytes of shared read buffer handed to libuv per read.
constexpr std::size_t k_read_chunk = 64 * 1024;

// An input buffer this large or larger is released once empty, so a connection that
// once sent a big request does not keep the memory while idle.
constexpr std::size_t k_keep_input_capacity = 4096;

// A backlog that reached this size is followed by malloc_trim once it is gone (written,
// or dropped with its connection): glibc keeps freed heap memory, and raises its mmap
// threshold after freeing a large block so the next ones come from the heap too; a
// status of a thousand services, or a stalled subscriber's queue, would otherwise stay
// resident for good. `pkitctl status` of a thousand services asks only for the fields it
// shows: a reply of about 100 KiB, whose rows held 0.7 MiB of heap while it was built,
// so the mark is well below that.
constexpr std::size_t k_trim_after_bytes = 64 * 1024;

// At most this many pieces go in one write (the kernel takes at most IOV_MAX, 1024).
constexpr std::size_t k_max_write_pieces = 512;

// How much a finishing client may still send before pkitd stops reading it (the rest of
// a too-large line, say); the time bound is ControlServer::k_linger_ms.
constexpr std::size_t k_linger_bytes = 4 * 1024 * 1024;

std::size_t cost(const SharedText& piece) {
    return piece->size() + k_piece_overhead_bytes;
}

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
    forget_request();
    if (write(std::move(line))) {
        pump();
    }
}

void ControlServer::Connection::reply_and_end(std::string line) {
    if (m_closed || !m_busy) {
        return;
    }
    m_busy = false;
    forget_request();
    if (write(std::move(line))) {
        finish();
    }
}

void ControlServer::Connection::forget_request() {
    if (m_request.capacity() > k_keep_input_capacity) {
        m_request = std::string();
    } else {
        m_request.clear();
    }
}

bool ControlServer::Connection::send(SharedText head, SharedText body) {
    if (m_closed || m_finishing) {
        return false;
    }
    return write({std::move(head), std::move(body)}, true);
}

std::size_t ControlServer::Connection::backlog() const {
    return m_closed ? 0 : m_queued_bytes;
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
    if (m_peak_bytes >= k_trim_after_bytes) {
        m_server.m_trim_owed = true;
    }
    m_pipe.reset();  // the write under way, if any, is cancelled and frees its pieces
    m_writes.clear();
    m_input = std::string();
    m_request = std::string();
    m_queue = std::deque<SharedText>();
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
    const WriteRequest* owned_address = owned.get();
    std::size_t written = owned->bytes;
    owned.reset();  // the last holder of a shared piece frees it here
    if (self == nullptr) {
        return;
    }
    try {
        if (!self->m_writes.empty() && self->m_writes.front() == owned_address) {
            self->m_writes.pop_front();
        }
        self->m_writing = false;
        self->m_queued_bytes -= std::min(written, self->m_queued_bytes);
        if (status < 0) {
            self->close();  // the client went away (EPIPE, ECONNRESET)
            return;
        }
        if (!self->flush()) {
            return;
        }
        if (self->m_queued_bytes == 0) {
            // Everything is written: a backlog that grew large leaves memory behind.
            if (std::exchange(self->m_peak_bytes, 0) >= k_trim_after_bytes) {
                malloc_trim(0);
            }
        }
        if (self->m_paused && !self->backlogged()) {
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
        if (!m_closed && m_busy) {
            // Answered on a later turn: kept, for an upgrade to hand over meanwhile.
            m_request.assign(line);
        }
    } catch (...) {
        // A handler bug must not take pkitd down; the client still gets its one reply.
        if (!m_closed && m_busy) {
            m_busy = false;
            forget_request();
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

bool ControlServer::Connection::write(std::string line) {
    return write({std::make_shared<const std::string>(std::move(line))}, false);
}

bool ControlServer::Connection::write(std::initializer_list<SharedText> pieces, bool bounded) {
    if (m_closed) {
        return false;
    }
    std::size_t bytes = 0;
    for (const SharedText& piece : pieces) {
        bytes += piece ? cost(piece) : 0;
    }
    // Replies need no bound here: requests are handled only below the pause mark, so a
    // reply backlog stays under the mark plus one reply. Stream lines come whether the
    // client reads or not: one larger than the bound may go out on an idle connection,
    // a backlog that keeps growing may not.
    if (bounded && m_queued_bytes > 0 &&
        m_queued_bytes + bytes > m_server.m_options.max_backlog_bytes) {
        close();
        return false;
    }
    for (const SharedText& piece : pieces) {
        if (piece) {
            m_queue.push_back(piece);
        }
    }
    m_queued_bytes += bytes;
    m_peak_bytes = std::max(m_peak_bytes, m_queued_bytes);
    return flush();
}

bool ControlServer::Connection::flush(bool everything) {
    while (!m_closed && !m_queue.empty() && (everything || !m_writing)) {
        auto request = std::make_unique<WriteRequest>();
        std::size_t count = std::min(m_queue.size(), k_max_write_pieces);
        request->pieces.reserve(count);
        std::vector<uv_buf_t> buffers;
        buffers.reserve(count);
        for (std::size_t k = 0; k < count; ++k) {
            SharedText& piece = m_queue.front();
            buffers.push_back(uv_buf_init(const_cast<char*>(piece->data()), piece->size()));
            request->bytes += cost(piece);
            request->pieces.push_back(std::move(piece));
            m_queue.pop_front();
        }
        // libuv copies the buffer list; the pieces stay with the request until on_write.
        if (uv_write(&request->request, m_pipe.as_stream(), buffers.data(),
                     static_cast<unsigned>(buffers.size()), &on_write) != 0) {
            close();
            return false;
        }
        m_writes.push_back(request.release());  // on_write owns it now
        m_writing = true;
    }
    return !m_closed;
}

void ControlServer::Connection::finish() {
    if (m_finishing || m_closed) {
        return;
    }
    m_finishing = true;
    update_reading();
    m_input = std::string();
    m_start = m_scanned = 0;
    // libuv shuts the pipe down after the writes it holds: hand it everything queued.
    if (!flush(true)) {
        return;
    }
    auto request = std::make_unique<uv_shutdown_t>();
    if (uv_shutdown(request.get(), m_pipe.as_stream(), &on_shutdown) != 0) {
        close();
        return;
    }
    request.release();  // on_shutdown owns it now
}

}  // namespace pkit::shell
