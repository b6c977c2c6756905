#include "daemon/shell/io/line_reader.hpp"

#include <memory>
#include <string>
#include <utility>

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace pkit::shell {

namespace {

constexpr std::size_t k_read_buffer_size = 64 * 1024;

// Reads one poll callback makes at most while each fills the buffer (as libuv's own
// streams do), so that one chatty child cannot keep the loop from the others.
constexpr int k_reads_per_turn = 32;

// Large enough to keep a typical partial line without reallocating, small enough that
// an idle reader does not keep a 16 KiB piece's worth of capacity around.
constexpr std::size_t k_keep_capacity = 1024;

// The buffer every reader of the thread reads into: each read is split into lines
// before the next. Allocated at the first read and not zero-filled: as a thread_local
// array it was in every thread's static TLS, which the C library zero-fills at the
// thread's start (64 KiB resident in each of pkitd's threads, the spawner's and the
// reload workers' included, which never read).
char* read_buffer() {
    thread_local std::unique_ptr<char[]> buffer;
    if (!buffer) {
        buffer = std::make_unique_for_overwrite<char[]>(k_read_buffer_size);
    }
    return buffer.get();
}

}  // namespace

// What a reader holds, in one block. Once the poll handle is initialised, the block
// belongs to libuv until the handle's close callback: closing the reader from inside
// one of its own callbacks leaves the block (and the running callback) alive until the
// loop's next turn, and `closed` stops everything that would follow.
struct LineReader::Watch {
    uv_poll_t poll{};
    LineCallback on_line;
    EofCallback on_eof;
    std::string partial;
    int fd = -1;
    bool polling = false;  // uv_poll_init succeeded: the close callback frees the block
    bool closed = false;   // the owner has let go: no callback runs any more
    bool eof = false;

    // How far read_some goes: until a read finds the pipe empty, or (in the loop's
    // callback, where another callback follows if more comes) until a read that does
    // not fill the buffer.
    enum class Until { empty, short_read };

    static void on_poll(uv_poll_t* handle, int status, int events);
    // Reads the fd into `buffer` and delivers its lines, at most `limit` bytes;
    // finishes at end of file or on a read error.
    void read_some(char* buffer, std::size_t size, std::size_t limit, Until until);
    // Splits `data` into lines; returns false once the reader is closed.
    bool consume(const char* data, std::size_t size);
    bool emit(std::string_view line);
    void finish();
    // Empties the partial line, giving back its memory if it had grown.
    void clear_partial();
};

LineReader::LineReader(uv_loop_t* loop, LineCallback on_line, EofCallback on_eof)
    : m_watch(new Watch{.on_line = std::move(on_line), .on_eof = std::move(on_eof)}) {
    m_watch->poll.loop = loop;  // kept for start(); uv_poll_init sets it again
}

LineReader::LineReader(LineReader&& other) noexcept
    : m_watch(std::exchange(other.m_watch, nullptr)) {}

LineReader& LineReader::operator=(LineReader&& other) noexcept {
    if (this != &other) {
        close();
        m_watch = std::exchange(other.m_watch, nullptr);
    }
    return *this;
}

std::expected<void, int> LineReader::start(int fd) {
    int rc = UV_EINVAL;
    if (m_watch != nullptr && !m_watch->polling) {
        rc = uv_poll_init(m_watch->poll.loop, &m_watch->poll, fd);
    }
    if (rc != 0) {
        ::close(fd);
        return std::unexpected(rc);
    }
    m_watch->poll.data = m_watch;
    m_watch->fd = fd;
    m_watch->polling = true;
    rc = uv_poll_start(&m_watch->poll, UV_READABLE, &Watch::on_poll);
    if (rc != 0) {
        return std::unexpected(rc);
    }
    return {};
}

void LineReader::close() {
    Watch* watch = std::exchange(m_watch, nullptr);
    if (watch == nullptr) {
        return;
    }
    watch->closed = true;
    if (!watch->polling) {
        delete watch;
        return;
    }
    // uv_close stops the poll and takes the fd out of the loop's epoll set now, so the
    // fd can be closed at once; the block goes with the close callback.
    uv_close(reinterpret_cast<uv_handle_t*>(&watch->poll),
             [](uv_handle_t* closed) { delete static_cast<Watch*>(closed->data); });
    ::close(watch->fd);
}

bool LineReader::at_eof() const {
    return m_watch != nullptr && m_watch->eof;
}

std::size_t LineReader::footprint() {
    return sizeof(Watch);
}

void LineReader::drain(std::size_t limit) {
    if (m_watch == nullptr || !m_watch->polling || m_watch->eof) {
        return;
    }
    // Not the shared buffer: a drain may run from inside another reader's callback.
    char buffer[16 * 1024];
    m_watch->read_some(buffer, sizeof buffer, limit, Watch::Until::empty);
}

void LineReader::Watch::on_poll(uv_poll_t* handle, int status, int /*events*/) {
    auto* self = static_cast<Watch*>(handle->data);
    if (self->closed || self->eof) {
        return;
    }
    std::size_t limit = k_reads_per_turn * k_read_buffer_size;
    if (status >= 0) {
        self->read_some(read_buffer(), k_read_buffer_size, limit, Until::short_read);
        return;
    }
    // An error (POLLERR: a socket reset, say). libuv has stopped the poll and calls back
    // no more, so what the fd still holds is read now and the stream ends here.
    self->read_some(read_buffer(), k_read_buffer_size, limit, Until::empty);
    if (!self->closed && !self->eof) {
        self->finish();
    }
}

void LineReader::Watch::read_some(char* buffer, std::size_t size, std::size_t limit, Until until) {
    std::size_t total = 0;
    while (!closed && total < limit) {
        ssize_t n = ::read(fd, buffer, size);
        if (n > 0) {
            total += static_cast<std::size_t>(n);
            if (!consume(buffer, static_cast<std::size_t>(n))) {
                return;  // a callback closed the reader
            }
            if (until == Until::short_read && static_cast<std::size_t>(n) < size) {
                return;  // the pipe is empty for now
            }
            continue;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return;  // everything written so far has been read
        }
        finish();  // end of file, or an error: nothing more will come
        return;
    }
}

bool LineReader::Watch::emit(std::string_view line) {
    try {
        on_line(line);
    } catch (...) {
        // A consumer's failure must not reach libuv or stop the draining.
    }
    return !closed;
}

bool LineReader::Watch::consume(const char* data, std::size_t size) {
    const char* end = data + size;
    while (data < end) {
        const char* newline = static_cast<const char*>(std::memchr(data, '\n', end - data));
        std::size_t take = static_cast<std::size_t>((newline != nullptr ? newline : end) - data);
        std::size_t room = k_max_line - partial.size();
        if (take > room) {
            // The line is over the limit: deliver a full piece and keep going.
            if (partial.empty()) {
                if (!emit(std::string_view(data, k_max_line))) {
                    return false;
                }
            } else {
                partial.append(data, room);
                if (!emit(partial)) {
                    return false;
                }
                clear_partial();
            }
            data += room;
            continue;
        }
        if (newline == nullptr) {
            partial.append(data, take);
            return true;
        }
        if (partial.empty()) {
            if (!emit(std::string_view(data, take))) {
                return false;
            }
        } else {
            partial.append(data, take);
            if (!emit(partial)) {
                return false;
            }
            clear_partial();
        }
        data = newline + 1;
    }
    return true;
}

void LineReader::Watch::clear_partial() {
    if (partial.capacity() > k_keep_capacity) {
        std::string().swap(partial);
    } else {
        partial.clear();
    }
}

void LineReader::Watch::finish() {
    uv_poll_stop(&poll);
    eof = true;
    if (!partial.empty()) {
        std::string last;
        last.swap(partial);
        if (!emit(last)) {
            return;
        }
    }
    try {
        if (on_eof) {
            on_eof();
        }
    } catch (...) {
    }
}

}  // namespace pkit::shell
