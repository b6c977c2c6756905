#pragma once
// One service's log file as the writer thread keeps it (SPEC §18): lines written whole,
// rotation by size between two lines, reopening, and the failure episodes. Synchronous
// and single-threaded: LogFiles calls it from its writer thread only, and tests call it
// directly against a real directory or a LogDisk that fails on demand.
//
//   state     write(lines)                               on a failing operation
//   closed    open, then as `open`                       -> failing (an episode begins)
//   open      write each line; rotate first when it      -> failing
//             would take the file past max_size
//   failing   before next_try: drop and count them;      stays failing (same episode)
//             after: open (if closed), write the notice
//             "pkitd: N lines dropped", then as `open`
//
// A write that fails part-way leaves the file cut back to its last whole line, so a
// line is either in the file whole or counted as dropped, never both, never half.

#include <chrono>
#include <cstdint>
#include <span>
#include <string>

#include "config/log_file.hpp"
#include "daemon/shell/logfile/log_disk.hpp"
#include "daemon/shell/logfile/log_format.hpp"

namespace pkit::shell {

class LogFileWriter {
public:
    using Clock = std::chrono::steady_clock;
    // How long a failing file drops lines before it is tried again.
    static constexpr std::chrono::seconds k_retry{1};

    // What one call did, for the owner's counters and its reports to the loop.
    struct Outcome {
        std::uint64_t lines = 0;      // written
        std::uint64_t bytes = 0;      // written, notices included
        std::uint64_t dropped = 0;    // lines dropped by this call
        std::uint32_t rotations = 0;  // done by this call
        int failed = 0;               // errno of a failure episode that began in this call
        std::string failed_path;      // the path it failed on (PATH, or PATH.K in a rotation)
        std::uint64_t recovered = 0;  // the dropped count of an episode that ended here
        bool recovered_episode = false;
    };

    // Opens nothing until the first write. `service` is the json format's "service".
    LogFileWriter(LogDisk& disk, config::LogFileSpec spec, std::string service);
    ~LogFileWriter();
    LogFileWriter(const LogFileWriter&) = delete;
    LogFileWriter& operator=(const LogFileWriter&) = delete;

    // Writes `lines` in order, `now` and `wall` (unix seconds, for the drop notice)
    // being the time of the call. `dropped_after` lines came after these and were
    // dropped before reaching the writer (a full queue): the notice that counts them
    // follows these lines, where the gap is.
    Outcome write(std::span<const LogRecord> lines, Clock::time_point now, double wall,
                  std::uint64_t dropped_after = 0);

    // Rotates now (`pkitctl rotate`), unless the file is empty. A failing file is left
    // to its retry.
    Outcome rotate(Clock::time_point now);
    // Closes the file; the next write opens it again at its path (SIGUSR1, for an
    // external logrotate that moved it).
    void reopen();
    // Switches to `spec` (a reload): the current file is closed between two lines; a
    // new path is opened at the next write. Drops still unreported stay unreported
    // until the new file can take the notice.
    void reconfigure(config::LogFileSpec spec);

    // Tries a failing file again now, if its retry is due: writes the notice only.
    Outcome retry(Clock::time_point now, double wall);

    const config::LogFileSpec& spec() const { return m_spec; }
    // The file's size as pkitd last knew it (0 while closed before the first open).
    std::uint64_t size() const { return m_size; }
    bool failing() const { return m_error != 0; }
    int error() const { return m_error; }
    Clock::time_point next_try() const { return m_next_try; }
    // Lines dropped that no notice has reported yet.
    std::uint64_t unreported() const { return m_unreported; }

private:
    // Opens the file if closed, and writes a due notice; false (and failing) when not.
    bool ready(Outcome& out, Clock::time_point now, double wall);
    bool open(Outcome& out, Clock::time_point now);
    // Cuts an existing file back to its last '\n' (a pkitd killed inside a write).
    void repair_tail();
    // Writes m_batch, whole lines; on failure cuts back and counts the lost lines.
    bool flush(Outcome& out, Clock::time_point now);
    bool do_rotate(Outcome& out, Clock::time_point now);
    void fail(Outcome& out, int error, const std::string& path, Clock::time_point now);
    void close_file();

    LogDisk& m_disk;
    config::LogFileSpec m_spec;
    std::string m_service;
    int m_fd = -1;
    std::uint64_t m_size = 0;
    int m_error = 0;  // nonzero while failing: the episode's errno
    Clock::time_point m_next_try{};
    std::uint64_t m_unreported = 0;
    std::string m_batch;  // formatted lines not yet written, whole lines only
};

}  // namespace pkit::shell
