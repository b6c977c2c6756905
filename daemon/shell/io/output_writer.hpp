#pragma once
// Forwarding to pkitd's own stdout or stderr (SPEC §4) without ever blocking the loop:
// when the stream stalls (a slow `docker logs`, a paused terminal), lines are queued up
// to a bound, then dropped and counted, and one notice line tells the reader how many
// went missing once the stream moves again.
//
// Forwarded lines are batched: a service's output arrives in reads of up to 64 KiB,
// and a write(2) per line cost more than the rest of forwarding (at 50 MB/s of 100-byte
// lines, half a million writes a second). They are appended to the queue and written
// together when the turn of the loop ends, or as soon as 64 KiB are waiting.

#include <uv.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "daemon/shell/uv_handle.hpp"

namespace pkit::shell {

// The form of pkitd's own log lines and forwarded output (pkitd --log-format).
enum class LogFormat { text, json };

class OutputWriter {
public:
    static constexpr std::size_t k_default_backlog = 1024 * 1024;

    // Writes to `fd` (not owned, never closed). Pipes, sockets and terminals are made
    // non-blocking and watched for writability; anything else (a regular file, or a
    // device epoll refuses, such as /dev/null) cannot stall in the way that matters
    // and is written directly.
    OutputWriter(uv_loop_t* loop, int fd, std::size_t max_backlog = k_default_backlog);
    // Gives the fd back its original blocking mode, since its open file description is
    // shared with whoever started pkitd (a shell's terminal). Queued lines are lost
    // unless flush_blocking() ran first.
    ~OutputWriter();

    OutputWriter(const OutputWriter&) = delete;
    OutputWriter& operator=(const OutputWriter&) = delete;

    // Writes `line` and a '\n'. Never blocks: if the stream is busy the line is queued,
    // and if the queue is at its bound (or lines were dropped and the queue has not yet
    // drained) it is dropped and counted.
    void write_line(std::string_view line);

    // The parts of one line, then a '\n', written with the turn's other lines (see
    // above); queued, dropped and counted as write_line's lines are. Nothing is
    // allocated per line once the queue has grown to its batch.
    void batch_line(std::initializer_list<std::string_view> parts);

    // For shutdown: waits up to `limit` for the queue (and any drop notice) to reach the
    // fd. Returns true if everything was written.
    bool flush_blocking(std::chrono::milliseconds limit = std::chrono::seconds(1));

    std::size_t queued_bytes() const { return m_buffer.size() - m_offset; }
    // Lines dropped since the writer was made.
    std::uint64_t dropped_lines() const { return m_dropped_total; }
    // Lines dropped that no notice has reported yet.
    std::uint64_t unreported_drops() const { return m_dropped_pending; }
    std::uint64_t notices_written() const { return m_notices; }
    // True when the fd is written directly rather than watched (see the constructor).
    bool direct() const { return !m_watched; }

private:
    static void on_writable(uv_poll_t* handle, int status, int events);

    // Writes what is queued until the fd would block; queues the drop notice once the
    // backlog is gone. Starts or stops the writability watch to match.
    void flush_some();
    void drop_line();
    void write_direct(std::string_view line);
    void queue_notice();
    void update_watch();
    // Appends one line of `parts` to the queue, or drops it at the bound; false when
    // dropped.
    bool enqueue(std::initializer_list<std::string_view> parts);

    int m_fd;
    std::size_t m_max_backlog;
    UvHandle<uv_poll_t> m_poll;
    NextTurn m_flush;        // writes the batch at the end of the turn
    bool m_watched = false;  // non-blocking and polled
    bool m_polling = false;  // uv_poll_start is in effect
    bool m_broken = false;   // the reader is gone (EPIPE): drop everything
    int m_original_flags = 0;
    std::string m_buffer;  // queued bytes are m_buffer[m_offset..]
    std::size_t m_offset = 0;
    std::uint64_t m_dropped_total = 0;
    std::uint64_t m_dropped_pending = 0;
    std::uint64_t m_notices = 0;
};

}  // namespace pkit::shell
