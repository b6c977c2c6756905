#include "daemon/shell/io/line_reader.hpp"

#include <memory>

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace pkit::shell {

namespace {

constexpr std::size_t k_read_buffer_size = 64 * 1024;

// Large enough to keep a typical partial line without reallocating, small enough that
// an idle reader does not keep a 16 KiB piece's worth of capacity around.
constexpr std::size_t k_keep_capacity = 1024;

}  // namespace

LineReader::LineReader(uv_loop_t* loop, LineCallback on_line, EofCallback on_eof)
    : m_pipe(this), m_on_line(std::move(on_line)), m_on_eof(std::move(on_eof)) {
    m_pipe.init(uv_pipe_init, loop, 0);
}

LineReader::~LineReader() {
    if (m_destroyed != nullptr) {
        *m_destroyed = true;
    }
}

std::expected<void, int> LineReader::start(int fd) {
    int rc = m_pipe.initialized() ? uv_pipe_open(m_pipe.get(), fd) : UV_EINVAL;
    if (rc != 0) {
        close(fd);
        return std::unexpected(rc);
    }
    rc = uv_read_start(m_pipe.as_stream(), &LineReader::on_alloc, &LineReader::on_read);
    if (rc != 0) {
        return std::unexpected(rc);
    }
    return {};
}

void LineReader::on_alloc(uv_handle_t* /*handle*/, std::size_t /*suggested*/, uv_buf_t* buf) {
    // libuv passes each filled buffer to on_read before it allocates again, so one
    // buffer per thread serves every reader. Allocated at the first read and not
    // zero-filled: as a thread_local array it was in every thread's static TLS, which
    // the C library zero-fills at the thread's start (64 KiB resident in each of pkitd's
    // threads, the spawner's and the reload workers' included, which never read).
    thread_local std::unique_ptr<char[]> buffer;
    if (!buffer) {
        buffer = std::make_unique_for_overwrite<char[]>(k_read_buffer_size);
    }
    *buf = uv_buf_init(buffer.get(), static_cast<unsigned>(k_read_buffer_size));
}

void LineReader::on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) {
    auto* self = static_cast<LineReader*>(stream->data);
    if (self == nullptr || nread == 0) {
        return;
    }
    if (nread > 0) {
        self->consume(buf->base, static_cast<std::size_t>(nread));
        return;
    }
    // UV_EOF, or an error such as EIO: either way nothing more will come.
    self->finish();
}

bool LineReader::emit(std::string_view line) {
    bool destroyed = false;
    m_destroyed = &destroyed;
    try {
        m_on_line(line);
    } catch (...) {
        // A consumer's failure must not reach libuv or stop the draining.
    }
    if (destroyed) {
        return false;
    }
    m_destroyed = nullptr;
    return true;
}

bool LineReader::consume(const char* data, std::size_t size) {
    const char* end = data + size;
    while (data < end) {
        const char* newline = static_cast<const char*>(std::memchr(data, '\n', end - data));
        std::size_t take = static_cast<std::size_t>((newline != nullptr ? newline : end) - data);
        std::size_t room = k_max_line - m_partial.size();
        if (take > room) {
            // The line is over the limit: deliver a full piece and keep going.
            if (m_partial.empty()) {
                if (!emit(std::string_view(data, k_max_line))) {
                    return false;
                }
            } else {
                m_partial.append(data, room);
                if (!emit(m_partial)) {
                    return false;
                }
                clear_partial();
            }
            data += room;
            continue;
        }
        if (newline == nullptr) {
            m_partial.append(data, take);
            return true;
        }
        if (m_partial.empty()) {
            if (!emit(std::string_view(data, take))) {
                return false;
            }
        } else {
            m_partial.append(data, take);
            if (!emit(m_partial)) {
                return false;
            }
            clear_partial();
        }
        data = newline + 1;
    }
    return true;
}

void LineReader::clear_partial() {
    if (m_partial.capacity() > k_keep_capacity) {
        std::string().swap(m_partial);
    } else {
        m_partial.clear();
    }
}

void LineReader::finish() {
    uv_read_stop(m_pipe.as_stream());
    if (!m_partial.empty()) {
        std::string last;
        last.swap(m_partial);
        if (!emit(last)) {
            return;
        }
    }
    m_eof = true;
    try {
        if (m_on_eof) {
            m_on_eof();
        }
    } catch (...) {
    }
}

void LineReader::drain(std::size_t limit) {
    if (m_eof || !m_pipe.initialized()) {
        return;
    }
    uv_os_fd_t fd = -1;
    if (uv_fileno(m_pipe.as_handle(), &fd) != 0) {
        return;
    }
    char buffer[16 * 1024];
    std::size_t total = 0;
    while (total < limit) {
        ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n > 0) {
            total += static_cast<std::size_t>(n);
            if (!consume(buffer, static_cast<std::size_t>(n))) {
                return;  // a callback destroyed the reader
            }
            continue;
        }
        if (n == 0) {
            finish();  // may destroy the reader: touch nothing after it
            return;
        }
        if (errno == EINTR) {
            continue;
        }
        return;  // EAGAIN: everything written so far has been read
    }
}

}  // namespace pkit::shell
