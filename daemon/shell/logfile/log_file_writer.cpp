// LogFileWriter: whole lines, rotation and failure episodes of one log file.

#include "daemon/shell/logfile/log_file_writer.hpp"

#include <algorithm>
#include <cerrno>

namespace pkit::shell {
namespace {

// A batch is written once it holds this much: large writes, bounded memory.
constexpr std::size_t k_batch_bytes = 256 * 1024;
// How far back from the end a torn last line is looked for (a line is at most 16 KiB
// of text, ~100 KiB once escaped as JSON).
constexpr std::size_t k_repair_window = 1024 * 1024;

std::uint64_t count_lines(std::string_view bytes) {
    return static_cast<std::uint64_t>(std::count(bytes.begin(), bytes.end(), '\n'));
}

}  // namespace

LogFileWriter::LogFileWriter(LogDisk& disk, config::LogFileSpec spec, std::string service)
    : m_disk(disk), m_spec(std::move(spec)), m_service(std::move(service)) {}

LogFileWriter::~LogFileWriter() {
    close_file();
}

void LogFileWriter::close_file() {
    if (m_fd >= 0) {
        m_disk.close(m_fd);
        m_fd = -1;
    }
}

void LogFileWriter::fail(Outcome& out, int error, const std::string& path, Clock::time_point now) {
    if (m_error == 0) {
        out.failed = error;
        out.failed_path = path;
    }
    m_error = error;
    m_next_try = now + k_retry;
    close_file();  // the next try opens again: a removed directory is made again
}

bool LogFileWriter::open(Outcome& out, Clock::time_point now) {
    int fd = -1;
    std::uint64_t size = 0;
    if (int error = m_disk.open_append(m_spec.path, fd, size); error != 0) {
        fail(out, error, m_spec.path, now);
        return false;
    }
    m_fd = fd;
    m_size = size;
    repair_tail();
    return true;
}

void LogFileWriter::repair_tail() {
    if (m_size == 0) {
        return;
    }
    std::string last;
    if (m_disk.read_at(m_fd, m_size - 1, 1, last) != 0 || last == "\n" || last.empty()) {
        return;
    }
    std::uint64_t window = std::min<std::uint64_t>(m_size, k_repair_window);
    std::string tail;
    if (m_disk.read_at(m_fd, m_size - window, static_cast<std::size_t>(window), tail) != 0 ||
        tail.size() != window) {
        return;
    }
    std::size_t newline = tail.rfind('\n');
    if (newline == std::string::npos && window < m_size) {
        return;  // no line end in reach: leave the file as it is
    }
    std::uint64_t keep = m_size - window + (newline == std::string::npos ? 0 : newline + 1);
    if (m_disk.truncate(m_fd, keep) == 0) {
        m_size = keep;
    }
}

bool LogFileWriter::flush(Outcome& out, Clock::time_point now) {
    std::uint64_t lost = 0;
    std::size_t done = 0;
    while (done < m_batch.size()) {
        std::size_t n = 0;
        int error = m_disk.write(m_fd, std::string_view(m_batch).substr(done), n);
        if (error == 0 && n == 0) {
            error = EIO;
        }
        if (error != 0) {
            // Cut back to the last whole line written; what follows is dropped.
            std::size_t whole = done == 0 ? 0 : m_batch.rfind('\n', done - 1) + 1;
            if (whole < done) {
                (void)m_disk.truncate(m_fd, m_size + whole);
            }
            m_size += whole;
            out.bytes += whole;
            lost = count_lines(std::string_view(m_batch).substr(whole));
            out.dropped += lost;
            m_unreported += lost;
            m_batch.clear();
            fail(out, error, m_spec.path, now);
            return false;
        }
        done += n;
    }
    m_size += done;
    out.bytes += done;
    m_batch.clear();
    return true;
}

bool LogFileWriter::do_rotate(Outcome& out, Clock::time_point now) {
    close_file();
    const std::string& path = m_spec.path;
    if (m_spec.keep == 0) {
        if (int error = m_disk.remove(path); error != 0) {
            fail(out, error, path, now);
            return false;
        }
    } else {
        for (int k = m_spec.keep - 1; k >= 1; --k) {
            std::string from = path + "." + std::to_string(k);
            int error = m_disk.rename(from, path + "." + std::to_string(k + 1));
            if (error != 0 && error != ENOENT) {
                fail(out, error, from, now);
                return false;
            }
        }
        if (int error = m_disk.rename(path, path + ".1"); error != 0) {
            fail(out, error, path, now);
            return false;
        }
    }
    ++out.rotations;
    m_size = 0;
    return open(out, now);
}

bool LogFileWriter::ready(Outcome& out, Clock::time_point now, double wall) {
    if (m_error != 0 && now < m_next_try) {
        return false;
    }
    if (m_fd < 0 && !open(out, now)) {
        return false;
    }
    bool was_failing = m_error != 0;
    if (m_unreported > 0) {
        std::uint64_t dropped = m_unreported;
        std::string text = "pkitd: " + std::to_string(dropped) + " lines dropped";
        append_log_line(
            m_batch, m_spec.format, m_service,
            LogRecord{.stream = core::Stream::stderr_, .at = wall, .run = 0, .text = text});
        std::uint64_t before = m_unreported;
        if (!flush(out, now)) {
            // The notice's own line is no line of the service's.
            m_unreported = before;
            out.dropped -= std::min<std::uint64_t>(out.dropped, 1);
            return false;
        }
        m_unreported = 0;
        out.recovered = dropped;
        out.recovered_episode = true;
    } else if (was_failing) {
        out.recovered_episode = true;
    }
    m_error = 0;
    return true;
}

LogFileWriter::Outcome LogFileWriter::write(std::span<const LogRecord> lines, Clock::time_point now,
                                            double wall, std::uint64_t dropped_after) {
    Outcome out;
    if (!ready(out, now, wall)) {
        out.dropped += lines.size();
        m_unreported += lines.size() + dropped_after;
        return out;
    }
    std::uint64_t dropped_before = out.dropped;
    std::size_t i = 0;
    auto drop_rest = [&] {
        std::uint64_t rest = lines.size() - i;
        out.dropped += rest;
        m_unreported += rest;
    };
    for (; i < lines.size(); ++i) {
        std::size_t before = m_batch.size();
        append_log_line(m_batch, m_spec.format, m_service, lines[i]);
        if (m_size + m_batch.size() > m_spec.max_size && m_size + before > 0) {
            // This line would take the file over: the lines before it end the file, and
            // it begins the next one (alone if it is itself over the size).
            std::string line = m_batch.substr(before);
            m_batch.resize(before);
            if (!flush(out, now) || !do_rotate(out, now)) {
                drop_rest();
                break;
            }
            m_batch = std::move(line);
        }
        if (m_batch.size() >= k_batch_bytes && !flush(out, now)) {
            ++i;
            drop_rest();
            break;
        }
    }
    if (!m_batch.empty()) {
        (void)flush(out, now);
    }
    out.lines = lines.size() - (out.dropped - dropped_before);
    if (dropped_after > 0) {
        m_unreported += dropped_after;
        (void)ready(out, now, wall);  // the notice now, after the lines before the gap
    }
    return out;
}

LogFileWriter::Outcome LogFileWriter::rotate(Clock::time_point now) {
    Outcome out;
    if (m_error != 0) {
        return out;
    }
    if (m_fd < 0 && !open(out, now)) {
        return out;
    }
    if (m_size > 0) {
        (void)do_rotate(out, now);
    }
    return out;
}

void LogFileWriter::reopen() {
    close_file();
}

void LogFileWriter::reconfigure(config::LogFileSpec spec) {
    close_file();
    m_spec = std::move(spec);
    m_next_try = Clock::time_point{};  // a new path deserves a try at once
}

LogFileWriter::Outcome LogFileWriter::retry(Clock::time_point now, double wall) {
    Outcome out;
    if (m_error != 0 && now >= m_next_try) {
        (void)ready(out, now, wall);
    }
    return out;
}

}  // namespace pkit::shell
