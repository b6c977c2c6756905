#pragma once
// The blocking client side of the control socket's framing (SPEC §9: one JSON object a
// line), shared by pkitctl, the integration harness and the benchmarks. Transport only:
// connect, write bytes, read lines against a deadline. What a line means, and what a
// failure costs (an exit code, a failed test case, a missing sample), is the caller's.
// No event loop and no thread: every wait is a poll() bounded by the caller's deadline.
// The caller owns the descriptor and the buffer of bytes read past the last line.

#include <chrono>
#include <cstddef>
#include <expected>
#include <optional>
#include <string>
#include <string_view>

namespace pkit::proto {

// A reply larger than this is not from pkitd: refused rather than eat all memory.
inline constexpr std::size_t k_max_line_buffer = std::size_t{1} << 30;

// Why a connect failed: errno (0 when no system call failed) and the reason in words.
struct ConnectError {
    int code = 0;
    std::string text;
};

// Connects a close-on-exec Unix stream socket to `path` and returns it. `send_timeout`,
// when given, bounds every blocking write and the connect itself (SO_SNDTIMEO: a Unix
// connect blocks only while the listener's backlog is full). On failure the reason, in
// strerror's words or "the path is too long for a Unix socket".
std::expected<int, ConnectError> connect_unix(
    const std::string& path, std::optional<std::chrono::milliseconds> send_timeout = {});

// Writes every byte (EINTR retried; never SIGPIPE). On failure strerror's words.
std::expected<void, std::string> send_all(int fd, std::string_view bytes);

enum class LineRead { line, eof, timeout, interrupted, error, too_large };

struct LineResult {
    LineRead status = LineRead::eof;
    std::string text;  // the line (without its newline), or the error's words
};

// The next line of `fd`; bytes read past it stay in `buffer` for the next call. Waits
// until `deadline` (none: for ever). `interrupted`, when given, is asked before every
// wait (a signal handler installed without SA_RESTART wakes the wait). `too_large` once
// more than `max_buffer` bytes came without a newline. At end of stream, the complete
// lines already in `buffer` come first, then `eof` (every call after).
LineResult read_line(int fd, std::string& buffer,
                     std::optional<std::chrono::steady_clock::time_point> deadline,
                     bool (*interrupted)() = nullptr, std::size_t max_buffer = k_max_line_buffer);

}  // namespace pkit::proto
