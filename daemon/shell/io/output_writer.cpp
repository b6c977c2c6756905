#include "daemon/shell/io/output_writer.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>

namespace pkit::shell {

namespace {

// Past this, an emptied queue gives its memory back rather than keeping a megabyte
// around after one stall.
constexpr std::size_t k_keep_capacity = 64 * 1024;

// A batch is written as soon as it holds this much, without waiting for the turn's end:
// one read of a service's pipe is 64 KiB at most.
constexpr std::size_t k_batch_bytes = 64 * 1024;

bool may_stall(int fd) {
    struct stat info {};
    if (fstat(fd, &info) != 0) {
        return false;
    }
    return S_ISFIFO(info.st_mode) || S_ISSOCK(info.st_mode) || S_ISCHR(info.st_mode);
}

}  // namespace

OutputWriter::OutputWriter(uv_loop_t* loop, int fd, std::size_t max_backlog)
    : m_fd(fd), m_max_backlog(max_backlog), m_poll(this), m_flush(loop, [this] { flush_some(); }) {
    if (!may_stall(fd)) {
        return;
    }
    m_original_flags = fcntl(fd, F_GETFL);
    // uv_poll_init makes the fd non-blocking; it fails for fds epoll cannot watch.
    if (m_original_flags >= 0 && m_poll.init(uv_poll_init, loop, fd) == 0) {
        m_watched = true;
    } else {
        m_poll.reset();
    }
}

OutputWriter::~OutputWriter() {
    if (m_watched && (m_original_flags & O_NONBLOCK) == 0) {
        fcntl(m_fd, F_SETFL, m_original_flags);
    }
}

void OutputWriter::drop_line() {
    ++m_dropped_total;
    if (!m_broken) {
        ++m_dropped_pending;
    }
}

void OutputWriter::write_direct(std::string_view line) {
    iovec parts[2] = {{const_cast<char*>(line.data()), line.size()}, {const_cast<char*>("\n"), 1}};
    std::size_t total = line.size() + 1;
    std::size_t done = 0;
    while (done < total) {
        ssize_t n = done == 0 ? writev(m_fd, parts, 2)
                              : write(m_fd, done < line.size() ? line.data() + done : "\n",
                                      done < line.size() ? line.size() - done : 1);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && errno == EAGAIN && m_watched) {
            break;
        }
        if (n < 0) {
            if (errno == EPIPE) {
                m_broken = true;
            }
            if (done == 0) {
                drop_line();
                return;
            }
            break;
        }
        done += static_cast<std::size_t>(n);
    }
    if (done < total && m_watched && !m_broken) {
        // The stream is full: keep the rest of the line in order at the queue's front.
        if (done < line.size()) {
            m_buffer.append(line.substr(done));
        }
        m_buffer.push_back('\n');
        update_watch();
    }
}

void OutputWriter::write_line(std::string_view line) {
    if (m_broken) {
        drop_line();
        return;
    }
    if (!m_watched && queued_bytes() > 0) {
        if (enqueue({line})) {
            flush_some();  // the turn's batch first, then this line
        }
        return;
    }
    if (!m_watched) {
        write_direct(line);
        return;
    }
    if (queued_bytes() == 0 && m_dropped_pending == 0) {
        write_direct(line);
        return;
    }
    if (enqueue({line}) && !m_polling) {
        flush_some();  // a batch was waiting for the turn's end: it goes now, this line last
    }
}

bool OutputWriter::enqueue(std::initializer_list<std::string_view> parts) {
    std::size_t size = 1;
    for (std::string_view part : parts) {
        size += part.size();
    }
    // Once a line was dropped, drop everything until the backlog drains, so that the
    // notice sits exactly where the gap is.
    if (m_broken || m_dropped_pending > 0 || queued_bytes() + size > m_max_backlog) {
        drop_line();
        return false;
    }
    for (std::string_view part : parts) {
        m_buffer.append(part);
    }
    m_buffer.push_back('\n');
    return true;
}

void OutputWriter::batch_line(std::initializer_list<std::string_view> parts) {
    if (!enqueue(parts) || m_polling) {
        return;  // dropped, or the writability watch flushes
    }
    if (queued_bytes() >= k_batch_bytes) {
        flush_some();
    } else {
        m_flush.schedule();
    }
}

void OutputWriter::queue_notice() {
    m_buffer.append("pkitd: dropped ")
        .append(std::to_string(m_dropped_pending))
        .append(" lines of forwarded output\n");
    m_dropped_pending = 0;
    ++m_notices;
}

void OutputWriter::flush_some() {
    for (;;) {
        while (m_offset < m_buffer.size()) {
            ssize_t n = write(m_fd, m_buffer.data() + m_offset, m_buffer.size() - m_offset);
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n < 0 && errno == EAGAIN) {
                // Compact once the written prefix dominates, so the buffer stays near
                // the bound however long the stall lasts.
                if (m_offset > m_buffer.size() / 2) {
                    m_buffer.erase(0, m_offset);
                    m_offset = 0;
                }
                update_watch();
                return;
            }
            if (n < 0) {
                // EPIPE (nobody reads any more) or a hard error: give up on the queue.
                // Dropped lines were counted as they were dropped; with the stream
                // gone there is nobody to tell about them.
                m_broken = errno == EPIPE || m_broken;
                m_dropped_pending = 0;
                m_offset = m_buffer.size();
                break;
            }
            m_offset += static_cast<std::size_t>(n);
        }
        m_offset = 0;
        if (m_buffer.capacity() > k_keep_capacity) {
            std::string().swap(m_buffer);
        } else {
            m_buffer.clear();
        }
        if (m_dropped_pending == 0 || m_broken) {
            update_watch();
            return;
        }
        queue_notice();
    }
}

void OutputWriter::update_watch() {
    bool want = m_watched && !m_broken && queued_bytes() > 0;
    if (want && !m_polling) {
        m_polling = uv_poll_start(m_poll.get(), UV_WRITABLE, &OutputWriter::on_writable) == 0;
    } else if (!want && m_polling) {
        uv_poll_stop(m_poll.get());
        m_polling = false;
    }
}

void OutputWriter::on_writable(uv_poll_t* handle, int /*status*/, int /*events*/) {
    auto* self = static_cast<OutputWriter*>(handle->data);
    if (self != nullptr) {
        // On an error status the write below reports the cause (EPIPE...).
        self->flush_some();
    }
}

bool OutputWriter::flush_blocking(std::chrono::milliseconds limit) {
    if (!m_watched) {
        flush_some();  // a blocking fd: the batch goes in full, or fails
        return queued_bytes() == 0;
    }
    auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
        flush_some();
        if (queued_bytes() == 0 || m_broken) {
            return queued_bytes() == 0 && m_dropped_pending == 0;
        }
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            return false;
        }
        pollfd entry{m_fd, POLLOUT, 0};
        poll(&entry, 1, static_cast<int>(left.count()) + 1);
    }
}

}  // namespace pkit::shell
