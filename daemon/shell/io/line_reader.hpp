#pragma once
// Reads a run's stdout or stderr pipe as lines (SPEC §4): a line over 16 KiB is split
// into 16 KiB pieces, a last line without newline is still delivered, and the pipe is
// always drained so a child is never blocked by pkitd.
//
// Memory: a thousand services keep two thousand readers open, mostly idle, so an idle
// reader is one heap block: a libuv poll handle on the fd (160 bytes, where a
// uv_pipe_t stream is 264), the callbacks and the partial line seen so far. Reads land
// in one 64 KiB buffer shared by every reader on the thread: each read is split into
// lines before the next.
//
// Time: the readers of a thread deliver lines for at most 5 ms of a turn of the loop,
// all together (a drain until 10 ms into the turn), checked after each line, whatever
// each line costs its consumer (an output_matches search can cost milliseconds); each
// callback delivers one line at least. What was read and not yet delivered then is kept
// in a backlog that the next turn of the loop delivers first, in order.

#include <uv.h>

#include <cstddef>
#include <expected>
#include <functional>
#include <string_view>

namespace pkit::shell {

class LineReader {
public:
    // The longest line delivered in one piece.
    static constexpr std::size_t k_max_line = 16 * 1024;

    // Called for each complete line, without its '\n'. The view is valid only during
    // the call. May close or destroy the reader.
    using LineCallback = std::function<void(std::string_view line)>;
    // Called once at end of file or on a read error, after the last partial line. May
    // close or destroy the reader.
    using EofCallback = std::function<void()>;

    // A closed reader: holds nothing.
    LineReader() = default;
    LineReader(uv_loop_t* loop, LineCallback on_line, EofCallback on_eof);
    // Closes the reader (see close()).
    ~LineReader() { close(); }

    LineReader(LineReader&& other) noexcept;
    LineReader& operator=(LineReader&& other) noexcept;
    LineReader(const LineReader&) = delete;
    LineReader& operator=(const LineReader&) = delete;

    // Takes ownership of `fd` (a pipe or socket; made non-blocking) and starts reading.
    // On failure the fd is closed and the libuv error code returned.
    std::expected<void, int> start(int fd);

    // Reads synchronously whatever the pipe holds right now, up to `limit` bytes or
    // 10 ms of delivering, and delivers it as usual (end of file included), after any
    // backlog. pkitd calls it when a run's main process has exited, so that the run's
    // last lines are in its tail before the exit is judged (output_matches). May close
    // or destroy the reader through its callbacks.
    void drain(std::size_t limit = 1024 * 1024);

    // Stops reading and closes the fd; no callback runs afterwards. Safe inside a
    // callback of this reader (the block it reads into lives until libuv has closed the
    // poll handle, at the loop's next turn). Idempotent.
    void close();

    // Not closed.
    bool open() const { return m_watch != nullptr; }
    // True once the end of the stream has been delivered.
    bool at_eof() const;

    // An upgrade in place (SPEC §16) hands the fd over: the bytes read and not
    // delivered yet (the partial line, then any backlog), and the fd, which stays open.
    std::string pending() const;
    int fd() const;
    // The next pkitd's reader: `pending` is delivered as if just read, at the next turn.
    void restore_pending(std::string_view pending);

    // The bytes an open reader holds besides its partial line and a backlog (its block).
    static std::size_t footprint();

private:
    struct Watch;
    Watch* m_watch = nullptr;
};

}  // namespace pkit::shell
