#pragma once
// Reads a run's stdout or stderr pipe as lines (SPEC §4): a line over 16 KiB is split
// into 16 KiB pieces, a last line without newline is still delivered, and the pipe is
// always drained so a child is never blocked by pkitd.
//
// Memory: reads land in one 64 KiB buffer shared by every reader on the thread (libuv
// delivers each read to its callback before the next allocation), so an idle reader
// holds only its pipe handle and the partial line it has seen, which matters with a
// thousand services.

#include <uv.h>

#include <cstddef>
#include <expected>
#include <functional>
#include <string>
#include <string_view>

#include "daemon/shell/uv_handle.hpp"

namespace pkit::shell {

class LineReader {
public:
    // The longest line delivered in one piece.
    static constexpr std::size_t k_max_line = 16 * 1024;

    // Called for each complete line, without its '\n'. The view is valid only during
    // the call. May destroy the reader.
    using LineCallback = std::function<void(std::string_view line)>;
    // Called once at end of file or on a read error, after the last partial line. May
    // destroy the reader.
    using EofCallback = std::function<void()>;

    LineReader(uv_loop_t* loop, LineCallback on_line, EofCallback on_eof);
    // Closes the pipe (and its fd); no callback runs afterwards. Safe inside a callback.
    ~LineReader();

    LineReader(const LineReader&) = delete;
    LineReader& operator=(const LineReader&) = delete;

    // Takes ownership of `fd` (a pipe or socket; made non-blocking) and starts reading.
    // On failure the fd is closed and the libuv error code returned.
    std::expected<void, int> start(int fd);

    // Reads synchronously whatever the pipe holds right now, up to `limit` bytes, and
    // delivers it as usual (end of file included). pkitd calls it when a run's main
    // process has exited, so that the run's last lines are in its tail before the exit
    // is judged (output_matches). May destroy the reader through its callbacks.
    void drain(std::size_t limit = 1024 * 1024);

    // True once the end of the stream has been delivered.
    bool at_eof() const { return m_eof; }

private:
    static void on_alloc(uv_handle_t* handle, std::size_t suggested, uv_buf_t* buf);
    static void on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf);

    // Splits `data` into lines; returns false if a callback destroyed the reader.
    bool consume(const char* data, std::size_t size);
    bool emit(std::string_view line);
    void finish();
    // Empties the partial line, giving back its memory if it had grown.
    void clear_partial();

    UvHandle<uv_pipe_t> m_pipe;
    LineCallback m_on_line;
    EofCallback m_on_eof;
    std::string m_partial;
    bool m_eof = false;
    // Set by the destructor so a callback that destroys the reader stops the split loop.
    bool* m_destroyed = nullptr;
};

}  // namespace pkit::shell
