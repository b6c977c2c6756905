#pragma once
// LogFiles: every service's log file (SPEC §18), owned apart from the Daemon. The loop
// hands it each output line (append: a copy into the file's queue under a short lock,
// never a system call), and one writer thread formats and writes the queues, rotates
// and retries, so no disk, however slow or full, holds up the loop or a service.
//
// Memory is bounded: a file's queue holds at most k_file_queue bytes of line text (and
// 24 bytes a line), all queues together k_total_queue. A line that finds its queue full
// is dropped and counted, and so is every line after it until the writer has taken the
// queue, so that the file's order is the lines' order with one gap, which the notice
// "pkitd: N lines dropped" marks. Beyond the queues, the writer keeps a file's two
// buffers (one it writes, one the loop fills) of at most the queue's bound each, and
// its formatting batch of 256 KiB.
//
// Reports (a failure episode beginning, ending, a queue that filled) reach the loop
// through a uv_async_t and the callback given at construction, one per episode: the
// Daemon logs them and sends `log_error`.
//
// The writer thread sleeps when no file has lines or a retry due: no wake-up at all
// while the services are quiet.

#include <uv.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "config/log_file.hpp"
#include "daemon/core/types.hpp"
#include "daemon/shell/logfile/log_disk.hpp"
#include "daemon/shell/uv_handle.hpp"

namespace pkit::shell {

class LogFiles {
public:
    static constexpr std::size_t k_file_queue = 1024 * 1024;
    static constexpr std::size_t k_total_queue = 16 * 1024 * 1024;

    using Id = std::size_t;

    struct Report {
        enum class Kind {
            failed,      // a write, open or rotation failed: lines are dropped (`error`)
            queue_full,  // the writer is behind (a slow or stalled disk): lines are dropped
            recovered,   // writing again; `dropped` lines were lost in the episode
        };
        Kind kind = Kind::failed;
        Id id = 0;
        std::string service;
        std::string path;
        int error = 0;
        std::uint64_t dropped = 0;
        // The line pkitd logs: "web: log file /var/log/pkit/web.log: No space left on
        // device; lines are dropped", ...
        std::string text() const;
    };
    using ReportCallback = std::function<void(const Report&)>;

    // What status and metrics show of one file; read without waiting for the writer.
    struct Stats {
        std::string path;
        std::uint64_t size = 0;       // as the writer last knew it
        std::uint64_t rotations = 0;  // since add()
        std::uint64_t dropped = 0;    // lines, since add()
        std::uint64_t bytes = 0;      // written, since add()
    };

    // `disk` is where the writer's file operations go (tests pass a faulty one).
    LogFiles(uv_loop_t* loop, ReportCallback on_report,
             std::shared_ptr<LogDisk> disk = std::make_shared<PosixLogDisk>());
    // Waits up to 2 s for the queues to be written, then stops the writer; a writer
    // stuck in a stalled disk is left behind (detached) rather than waited for.
    ~LogFiles();
    LogFiles(const LogFiles&) = delete;
    LogFiles& operator=(const LogFiles&) = delete;

    // A file for `service`; nothing is opened until its first line.
    Id add(std::string service, config::LogFileSpec spec);
    // Writes what is queued for `id`, then closes it. The id is not used again.
    void remove(Id id);
    // Switches `id` to `spec` between two lines (a reload that changes the file).
    void reconfigure(Id id, config::LogFileSpec spec);

    // Queues one line. Never blocks on the disk; drops and counts at the bounds.
    void append(Id id, core::Stream stream, double at, std::uint64_t run, std::string_view text);

    // Rotates the file now (`pkitctl rotate`), after the lines queued before.
    void rotate(Id id);
    // Closes and reopens every file at its path (SIGUSR1).
    void reopen_all();

    Stats stats(Id id) const;
    // Waits up to `limit` for every queue to be written; true when they were.
    bool flush(std::chrono::milliseconds limit);
    std::size_t queued_bytes() const;

    struct Shared;  // log_files.cpp

private:
    static void on_async(uv_async_t* handle);
    void deliver_reports();
    void wake_writer();

    std::shared_ptr<Shared> m_shared;
    ReportCallback m_on_report;
    UvHandle<uv_async_t> m_async;
    NextTurn m_wake;  // wakes the writer once a turn of the loop, not once a line
};

}  // namespace pkit::shell
