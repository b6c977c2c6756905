#include "daemon/shell/io/line_reader.hpp"

#include <memory>
#include <string>
#include <utility>

#include "daemon/shell/uv_handle.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <vector>

namespace pkit::shell {

namespace {

constexpr std::size_t k_read_buffer_size = 64 * 1024;

// Reads one poll callback makes at most while each fills the buffer (as libuv's own
// streams do), so that one chatty child cannot keep the loop from the others.
constexpr int k_reads_per_turn = 32;

// How long the readers of a thread may go on delivering lines in one turn of the loop,
// all of them together, checked before each line (the turn's first goes whatever it
// costs): what a line costs its consumer (output_matches above all, up to a few ms for
// a line) must not add up to a loop held for tens of ms. What is read but not
// delivered by then is kept and delivered at the next turn. A drain, at a run's exit,
// may go on until 10 ms into the turn, and delivers one line at least: the lines it
// delivers judge the run.
constexpr std::uint64_t k_turn_budget_ns = 5'000'000;
constexpr std::uint64_t k_drain_budget_ns = 10'000'000;

// The turns of each loop that has readers, counted by a check handle: its callback runs
// after each poll phase, so a turn is one iteration of the loop, from the idle phase
// (where a backlog resumes) through the poll callbacks. uv_now() alone would not do:
// libuv sets it again after epoll returns, and a backlog delivered in the idle phase
// and a poll callback after it would each have had a budget of their own. Unreferenced,
// the handle keeps no loop alive; the readers hold it, and the last one closes it.
struct TurnCounter {
    uv_check_t check{};
    std::uint64_t turn = 0;
    std::size_t readers = 0;
};

// The counters of this thread's loops that have readers (one, but for tests).
std::vector<TurnCounter*>& turn_counters() {
    thread_local std::vector<TurnCounter*> counters;
    return counters;
}

std::vector<TurnCounter*>::iterator counter_of(uv_loop_t* loop) {
    return std::ranges::find_if(turn_counters(),
                                [loop](const TurnCounter* c) { return c->check.loop == loop; });
}

void hold_turn_counter(uv_loop_t* loop) {
    auto it = counter_of(loop);
    if (it == turn_counters().end()) {
        auto* counter = new TurnCounter;
        uv_check_init(loop, &counter->check);  // cannot fail on Unix
        counter->check.data = counter;
        uv_check_start(&counter->check,
                       [](uv_check_t* handle) { ++static_cast<TurnCounter*>(handle->data)->turn; });
        uv_unref(reinterpret_cast<uv_handle_t*>(&counter->check));
        it = turn_counters().insert(turn_counters().end(), counter);
    }
    ++(*it)->readers;
}

void release_turn_counter(uv_loop_t* loop) {
    auto it = counter_of(loop);
    if (it == turn_counters().end() || --(*it)->readers > 0) {
        return;
    }
    uv_close(reinterpret_cast<uv_handle_t*>(&(*it)->check),
             [](uv_handle_t* handle) { delete static_cast<TurnCounter*>(handle->data); });
    turn_counters().erase(it);
}

// What the current turn of a loop has spent on lines: when it began delivering them
// (uv_hrtime()), and whether a line went. The first reader's call of a turn starts the
// clock, and every later one in the same turn shares it. A clock older than any budget
// belongs to no call of this turn (a drain called while the loop does not run, say)
// and starts again.
struct TurnClock {
    uv_loop_t* loop = nullptr;
    std::uint64_t turn = ~std::uint64_t{0};
    std::uint64_t began = 0;
    bool delivered = false;
};

TurnClock& turn_clock(uv_loop_t* loop) {
    thread_local TurnClock clock;
    auto it = counter_of(loop);
    // A reader holds its loop's counter while it can deliver; were none found, the
    // loop's millisecond would stand in for the turn.
    const std::uint64_t turn = it != turn_counters().end() ? (*it)->turn : uv_now(loop);
    const std::uint64_t now = uv_hrtime();
    if (clock.loop != loop || clock.turn != turn || now - clock.began > 2 * k_drain_budget_ns) {
        clock = {loop, turn, now, false};
    }
    return clock;
}

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
    // Bytes read but not yet delivered when a turn's time ran out, and the turn that
    // delivers them. Made the first time it is needed: most readers never are.
    struct Backlog {
        std::string bytes;
        NextTurn resume;
    };

    uv_poll_t poll{};
    LineCallback on_line;
    EofCallback on_eof;
    std::string partial;
    std::unique_ptr<Backlog> backlog;
    int fd = -1;
    bool polling = false;  // uv_poll_init succeeded: the close callback frees the block
    bool closed = false;   // the owner has let go: no callback runs any more
    bool eof = false;
    bool poll_failed = false;  // libuv stopped the poll on an error: read to the end
    bool draining = false;     // in drain(): its first line goes whatever the turn spent
    // What the consumer took for the last line (uv_hrtime() ns, at most ~4 s): a line
    // is started only when one as costly would end within the turn's time.
    std::uint32_t line_ns = 0;

    // How far read_some goes: until a read finds the pipe empty, or (in the loop's
    // callback, where another callback follows if more comes) until a read that does
    // not fill the buffer.
    enum class Until { empty, short_read };
    // What consume did with its bytes.
    enum class Consumed { all, kept, closed };

    static void on_poll(uv_poll_t* handle, int status, int events);
    // The backlog's turn: delivers it, and reads on after a failed poll.
    void on_resume();
    // `budget` after the moment this turn of the loop began delivering lines.
    std::uint64_t deadline_in(std::uint64_t budget);
    // Delivers the backlog, then reads the fd into `buffer` and delivers its lines, at
    // most `limit` bytes, until uv_hrtime() passes `deadline`; finishes at end of file,
    // on a read error, or (after a failed poll) once the fd is empty.
    void read_some(char* buffer, std::size_t size, std::size_t limit, Until until,
                   std::uint64_t deadline);
    // Delivers the backlog's bytes; false unless all of them were.
    bool deliver_backlog(std::uint64_t deadline);
    // Splits `data` into lines until `deadline`, keeping the rest in the backlog.
    Consumed consume(const char* data, std::size_t size, std::uint64_t deadline);
    // Keeps `data` for the next turn.
    void keep(const char* data, std::size_t size);
    bool emit(std::string_view line);
    void finish();
    // Empties the partial line, giving back its memory if it had grown.
    void clear_partial();
    bool has_backlog() const { return backlog && !backlog->bytes.empty(); }
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
    hold_turn_counter(m_watch->poll.loop);
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
    watch->backlog.reset();  // its turn is cancelled with it
    if (!watch->polling) {
        delete watch;
        return;
    }
    release_turn_counter(watch->poll.loop);
    // uv_close stops the poll and takes the fd out of the loop's epoll set now, so the
    // fd can be closed at once; the block goes with the close callback.
    uv_close(reinterpret_cast<uv_handle_t*>(&watch->poll),
             [](uv_handle_t* closed) { delete static_cast<Watch*>(closed->data); });
    ::close(watch->fd);
}

bool LineReader::at_eof() const {
    return m_watch != nullptr && m_watch->eof;
}

std::string LineReader::pending() const {
    if (m_watch == nullptr) {
        return {};
    }
    std::string bytes = m_watch->partial;
    if (m_watch->backlog) {
        bytes += m_watch->backlog->bytes;
    }
    return bytes;
}

int LineReader::fd() const {
    return m_watch != nullptr && m_watch->polling ? m_watch->fd : -1;
}

void LineReader::restore_pending(std::string_view pending) {
    if (m_watch != nullptr && m_watch->polling && !pending.empty()) {
        m_watch->keep(pending.data(), pending.size());
    }
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
    Watch* watch = m_watch;  // alive until its close callback, even if closed meanwhile
    watch->draining = true;
    watch->read_some(buffer, sizeof buffer, limit, Watch::Until::empty,
                     watch->deadline_in(k_drain_budget_ns));
    watch->draining = false;
}

void LineReader::Watch::on_poll(uv_poll_t* handle, int status, int /*events*/) {
    auto* self = static_cast<Watch*>(handle->data);
    if (self->closed || self->eof) {
        return;
    }
    std::size_t limit = k_reads_per_turn * k_read_buffer_size;
    // An error (POLLERR: a socket reset, say): libuv has stopped the poll and calls back
    // no more, so what the fd still holds is read now (or by the backlog's turns) and
    // the stream ends there.
    self->poll_failed = self->poll_failed || status < 0;
    self->read_some(read_buffer(), k_read_buffer_size, limit,
                    self->poll_failed ? Until::empty : Until::short_read,
                    self->deadline_in(k_turn_budget_ns));
}

void LineReader::Watch::on_resume() {
    if (closed || eof) {
        return;
    }
    // Without a failed poll, only the backlog: the poll callback reads the fd.
    std::size_t limit = poll_failed ? k_reads_per_turn * k_read_buffer_size : 0;
    read_some(read_buffer(), k_read_buffer_size, limit, Until::empty,
              deadline_in(k_turn_budget_ns));
}

std::uint64_t LineReader::Watch::deadline_in(std::uint64_t budget) {
    return turn_clock(poll.loop).began + budget;
}

void LineReader::Watch::read_some(char* buffer, std::size_t size, std::size_t limit, Until until,
                                  std::uint64_t deadline) {
    if (has_backlog() && !deliver_backlog(deadline)) {
        return;  // still behind (or closed): the backlog's turn goes on
    }
    std::size_t total = 0;
    while (!closed && total < limit) {
        ssize_t n = ::read(fd, buffer, size);
        if (n > 0) {
            total += static_cast<std::size_t>(n);
            if (consume(buffer, static_cast<std::size_t>(n), deadline) != Consumed::all) {
                return;  // a callback closed the reader, or the time is up
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
            break;  // everything written so far has been read
        }
        finish();  // end of file, or an error: nothing more will come
        return;
    }
    if (poll_failed && !closed && !eof) {
        finish();  // no callback will come for the rest
    }
}

bool LineReader::Watch::deliver_backlog(std::uint64_t deadline) {
    std::string bytes;
    bytes.swap(backlog->bytes);
    Consumed consumed = consume(bytes.data(), bytes.size(), deadline);
    if (consumed == Consumed::all && backlog) {
        backlog->resume.cancel();
    }
    return consumed == Consumed::all;
}

void LineReader::Watch::keep(const char* data, std::size_t size) {
    if (!backlog) {
        backlog.reset(new Backlog{{}, NextTurn(poll.loop, [this] { on_resume(); })});
    }
    backlog->bytes.assign(data, size);
    backlog->resume.schedule();
}

bool LineReader::Watch::emit(std::string_view line) {
    try {
        on_line(line);
    } catch (...) {
        // A consumer's failure must not reach libuv or stop the draining.
    }
    return !closed;
}

LineReader::Watch::Consumed LineReader::Watch::consume(const char* data, std::size_t size,
                                                       std::uint64_t deadline) {
    const char* end = data + size;
    TurnClock& clock = turn_clock(poll.loop);
    // A turn's first line goes whatever it costs (and a drain's, which judges a run);
    // after it, a call whose line, as costly as its last, would not end in time keeps
    // everything for the next turn, where a backlog resumes before the poll callbacks.
    // Else one costly line a call would add up, with many readers, to a held loop.
    if (clock.delivered && !draining && uv_hrtime() + line_ns > deadline) {
        keep(data, size);
        return Consumed::kept;
    }
    // Checked after each line: the next line waits for the next turn unless one as
    // costly as the last would end in time.
    std::uint64_t mark = uv_hrtime();
    auto out_of_time = [&] {
        clock.delivered = true;  // after each line: the turn has had its first
        const std::uint64_t now = uv_hrtime();
        line_ns = static_cast<std::uint32_t>(
            std::min<std::uint64_t>(now - mark, std::numeric_limits<std::uint32_t>::max()));
        mark = now;
        if (data == end || now + line_ns <= deadline) {
            return false;
        }
        keep(data, static_cast<std::size_t>(end - data));
        return true;
    };
    while (data < end) {
        const char* newline = static_cast<const char*>(std::memchr(data, '\n', end - data));
        std::size_t take = static_cast<std::size_t>((newline != nullptr ? newline : end) - data);
        std::size_t room = k_max_line - partial.size();
        if (take > room) {
            // The line is over the limit: deliver a full piece and keep going.
            if (partial.empty()) {
                if (!emit(std::string_view(data, k_max_line))) {
                    return Consumed::closed;
                }
            } else {
                partial.append(data, room);
                if (!emit(partial)) {
                    return Consumed::closed;
                }
                clear_partial();
            }
            data += room;
            if (out_of_time()) {
                return Consumed::kept;
            }
            continue;
        }
        if (newline == nullptr) {
            partial.append(data, take);
            return Consumed::all;
        }
        if (partial.empty()) {
            if (!emit(std::string_view(data, take))) {
                return Consumed::closed;
            }
        } else {
            partial.append(data, take);
            if (!emit(partial)) {
                return Consumed::closed;
            }
            clear_partial();
        }
        data = newline + 1;
        if (out_of_time()) {
            return Consumed::kept;
        }
    }
    return Consumed::all;
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
