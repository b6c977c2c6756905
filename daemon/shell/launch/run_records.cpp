#include "daemon/shell/launch/run_records.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <optional>
#include <thread>

#include "daemon/shell/launch/launcher.hpp"

namespace pkit::shell {

namespace {

constexpr std::uint32_t k_max_stop_timeout_ms = 60'000;

struct ProcStart {
    char state;
    unsigned long long start_ticks;  // clock ticks after boot
};

// State and start time of `pid` from /proc/PID/stat, or nullopt when it does not exist.
std::optional<ProcStart> proc_start(pid_t pid) {
    char path[32];
    std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return std::nullopt;
    }
    char text[1024];
    ssize_t n = ::read(fd, text, sizeof text - 1);
    ::close(fd);
    if (n <= 0) {
        return std::nullopt;
    }
    text[n] = '\0';
    // The command name may hold anything, ')' included: the fields start after the last.
    const char* fields = std::strrchr(text, ')');
    if (fields == nullptr) {
        return std::nullopt;
    }
    ProcStart start{};
    // Field 3 (state) is the first after ')'; starttime is field 22.
    int matched = std::sscanf(fields + 1,
                              " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
                              "%*d %*d %llu",
                              &start.state, &start.start_ticks);
    if (matched != 2) {
        return std::nullopt;
    }
    return start;
}

// Whether `pid` is still the process `record` describes: it exists (a zombie too) and
// started within the record's window. A pid reused after the run died started later.
bool is_recorded_process(const RunRecord& record, std::optional<ProcStart>& now) {
    now = proc_start(record.pid);
    if (!now) {
        return false;
    }
    long hz = ::sysconf(_SC_CLK_TCK);
    std::int64_t ns_per_tick = 1'000'000'000 / (hz > 0 ? hz : 100);
    // /proc rounds the start time down to a tick.
    auto first = static_cast<unsigned long long>(record.after_ns / ns_per_tick);
    auto last = static_cast<unsigned long long>(record.before_ns / ns_per_tick);
    return now->start_ticks >= first && now->start_ticks <= last;
}

}  // namespace

std::int64_t boottime_ns() {
    timespec now{};
    ::clock_gettime(CLOCK_BOOTTIME, &now);
    return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

RunRecords::~RunRecords() {
    if (m_fd < 0) {
        return;
    }
    if (m_slot_of.empty()) {
        // Nothing left to end: no file left behind. Unlinked while still locked, so a
        // new pkitd that opened it meanwhile sees the inode gone and opens a new one.
        ::unlink(m_path.c_str());
    }
    ::close(m_fd);
}

std::expected<void, RunRecords::OpenError> RunRecords::open(std::string path,
                                                            std::chrono::milliseconds patience) {
    auto deadline = std::chrono::steady_clock::now() + patience;
    for (;;) {
        int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0) {
            return std::unexpected(
                OpenError{false, "cannot open " + path + ": " + std::strerror(errno)});
        }
        if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
            int error = errno;
            ::close(fd);
            if (error != EWOULDBLOCK) {
                return std::unexpected(
                    OpenError{false, "cannot lock " + path + ": " + std::strerror(error)});
            }
            if (std::chrono::steady_clock::now() >= deadline) {
                return std::unexpected(OpenError{true, "another pkitd holds " + path});
            }
            // A pkitd finishing its shutdown holds it for a moment more.
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
            continue;
        }
        // The lock is worth something only on the file the path names now: the previous
        // owner may have unlinked it between our open and our lock.
        struct stat opened {};
        struct stat named {};
        if (::fstat(fd, &opened) == 0 && ::stat(path.c_str(), &named) == 0 &&
            opened.st_dev == named.st_dev && opened.st_ino == named.st_ino) {
            m_fd = fd;
            m_path = std::move(path);
            return {};
        }
        ::close(fd);
    }
}

std::vector<pid_t> RunRecords::end_recorded_runs() {
    std::vector<pid_t> ended;
    if (m_fd < 0) {
        return ended;
    }
    struct Victim {
        RunRecord record;
        bool gone = false;
    };
    std::vector<Victim> victims;
    std::uint32_t grace_ms = 0;
    RunRecord record;
    for (off_t offset = 0;
         ::pread(m_fd, &record, sizeof record, offset) == static_cast<ssize_t>(sizeof record);
         offset += static_cast<off_t>(sizeof record)) {
        if (record.magic != k_run_record_magic || record.pid <= 1 || record.pid == ::getpid()) {
            continue;
        }
        std::optional<ProcStart> start;
        if (!is_recorded_process(record, start)) {
            continue;  // gone, or its pid now belongs to another process
        }
        int signo =
            record.stop_signal > 0 && record.stop_signal < NSIG ? record.stop_signal : SIGTERM;
        stop_signal(record.pid, signo, true);
        grace_ms = std::max(grace_ms, std::min(record.stop_timeout_ms, k_max_stop_timeout_ms));
        victims.push_back(Victim{record, false});
        ended.push_back(record.pid);
    }
    // Wait for the main processes (their new parent may not reap them: a zombie has
    // exited), then kill what is left of each group. The group's id cannot have been
    // taken by another group meanwhile: a pid stays allocated while a group uses it.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
    for (;;) {
        bool waiting = false;
        for (Victim& victim : victims) {
            if (!victim.gone) {
                std::optional<ProcStart> start;
                victim.gone = !is_recorded_process(victim.record, start) || start->state == 'Z';
                waiting = waiting || !victim.gone;
            }
        }
        if (!waiting || std::chrono::steady_clock::now() >= deadline) {
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    for (const Victim& victim : victims) {
        signal_run(victim.record.pid, SIGKILL, true);
    }
    if (::ftruncate(m_fd, 0) != 0) {
        // Left as it is, the records are checked again by the next pkitd: harmless.
    }
    return ended;
}

ChildRecord RunRecords::for_child(std::size_t slot, int stop_signal,
                                  std::chrono::nanoseconds stop_timeout) const {
    ChildRecord child;
    if (m_fd < 0) {
        return child;
    }
    child.fd = m_fd;
    child.offset = static_cast<off_t>(slot * sizeof(RunRecord));
    child.record.magic = k_run_record_magic;
    child.record.stop_signal = stop_signal;
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(stop_timeout).count();
    child.record.stop_timeout_ms =
        static_cast<std::uint32_t>(std::clamp<std::int64_t>(ms, 0, k_max_stop_timeout_ms));
    child.record.after_ns = boottime_ns();
    return child;
}

void RunRecords::started(std::size_t slot, pid_t pid) {
    if (m_fd < 0) {
        return;
    }
    if (slot >= m_pid_of.size()) {
        m_pid_of.resize(slot + 1, 0);
    }
    if (m_pid_of[slot] != 0) {
        m_slot_of.erase(m_pid_of[slot]);
    }
    m_pid_of[slot] = pid;
    m_slot_of[pid] = slot;
}

void RunRecords::ended(pid_t pid) {
    auto found = m_slot_of.find(pid);
    if (found == m_slot_of.end()) {
        return;
    }
    std::size_t slot = found->second;
    m_slot_of.erase(found);
    if (m_pid_of[slot] != pid) {
        return;  // a newer run of the slot wrote its own record
    }
    m_pid_of[slot] = 0;
    RunRecord free_slot;
    if (::pwrite(m_fd, &free_slot, sizeof free_slot, static_cast<off_t>(slot * sizeof free_slot)) !=
        static_cast<ssize_t>(sizeof free_slot)) {
        // The next pkitd finds the pid gone or reused, and leaves it alone.
    }
}

bool take_over_records(RunRecords& records, const std::string& path,
                       const std::function<void(std::string_view, const std::string&)>& log) {
    if (auto opened = records.open(path); !opened) {
        if (opened.error().held) {
            log("error", opened.error().message + ": is it still running?");
            return false;
        }
        log("warning",
            opened.error().message + ": should pkitd be killed, the next one cannot end its runs");
    } else if (auto ended = records.end_recorded_runs(); !ended.empty()) {
        std::string pids;
        for (pid_t pid : ended) {
            pids += (pids.empty() ? "" : ", ") + std::to_string(pid);
        }
        log("warning", "ended " + std::to_string(ended.size()) +
                           " runs a previous pkitd left running (pids " + pids + ")");
    }
    return true;
}

}  // namespace pkit::shell
