#pragma once
// The run records: a file beside the control socket (SOCKET.runs) that says which
// processes pkitd's runs are, so that a pkitd started after one that was killed
// (SIGKILL, a crash, the OOM killer) ends the runs it left behind before it starts its
// own, and never runs two copies of a service.
//
// Why a file, and not PR_SET_PDEATHSIG or cgroups: the parent-death signal fires when
// the *thread* that cloned the child exits, and runs are cloned by the Spawner thread,
// which an execve of pkitd ends (an in-place upgrade must keep every run); it is also
// cleared in a child that changes its uid or execs a set-uid program, and it reaches the
// main process only, not the rest of its process group. cgroups are not always there.
// A file in pkitd's own socket directory survives any death of pkitd and any execve.
//
// One fixed-size slot per service slot (a service slot goes to another service only
// once its last run was reaped, so its record is free by then). The
// child writes its own record, after setsid and before execve (launch_child.cpp), so a
// run is recorded before its program runs, even when pkitd dies during the clone; the
// loop frees the slot when it reaps the run's main process. Writes are one pwrite of
// 32 bytes each: the page cache keeps them when pkitd is killed.
//
// An exclusive flock on the open file says "a live pkitd owns these records". It goes
// with the open file description: a pkitd that re-execs itself keeps it only if it
// keeps this fd open across the execve.

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <expected>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "daemon/shell/child_exit.hpp"

namespace pkit::shell {

// A slot of the file, as written. magic == 0: free.
struct RunRecord {
    std::uint32_t magic = 0;
    std::int32_t pid = 0;
    // CLOCK_BOOTTIME (ns) before the clone and after the child's setsid: the process
    // started between the two, which is how a reused pid is told apart (its start time
    // in /proc/PID/stat lies after `before_ns`).
    std::int64_t after_ns = 0;
    std::int64_t before_ns = 0;
    std::int32_t stop_signal = 0;
    std::uint32_t stop_timeout_ms = 0;
};
static_assert(sizeof(RunRecord) == 32);

inline constexpr std::uint32_t k_run_record_magic = 0x31524b50;  // "PKR1"

// What a child writes: its record (pid and before_ns filled in by the child) at
// `offset` of `fd`. fd -1: nothing to write (exec probes, tests).
struct ChildRecord {
    int fd = -1;
    off_t offset = 0;
    RunRecord record;
};

// CLOCK_BOOTTIME in ns; async-signal-safe.
std::int64_t boottime_ns();

class RunRecords final : public ExitOwner {
public:
    RunRecords() = default;
    // Removes the file when no run is recorded any more (an orderly exit); keeps it
    // otherwise, for the next pkitd.
    ~RunRecords();
    RunRecords(const RunRecords&) = delete;
    RunRecords& operator=(const RunRecords&) = delete;

    struct OpenError {
        bool held;  // a live pkitd holds the lock
        std::string message;
    };
    // Opens (creating, mode 0600) the file at `path` and takes its lock. A lock still
    // held after `patience` means a live pkitd owns it (`held`). Other failures leave
    // the records closed; the caller may go on without them.
    std::expected<void, OpenError> open(
        std::string path, std::chrono::milliseconds patience = std::chrono::seconds(2));
    // The records a previous pkitd handed over in `fd`, its lock held (SPEC §16).
    void adopt(int fd, std::string path) {
        m_fd = fd;
        m_path = std::move(path);
    }
    int fd() const { return m_fd; }
    const std::string& path() const { return m_path; }

    // Ends every run the file records whose main process is still the recorded one
    // (same pid, start time within the record's window): its process group gets the
    // recorded stop signal with SIGCONT, then, once every such main process has exited
    // or the longest recorded stop timeout (at most 60 s) has passed, SIGKILL. Then
    // empties the file. Blocks (start-up only). Returns the pids it signalled.
    std::vector<pid_t> end_recorded_runs();

    // The record the child of a run of service slot `slot` writes; fd -1 when closed.
    ChildRecord for_child(std::size_t slot, int stop_signal,
                          std::chrono::nanoseconds stop_timeout) const;
    // The loop learnt the pid of slot `slot`'s run.
    void started(std::size_t slot, pid_t pid);
    // `pid` was reaped: frees its slot, unless a newer run holds it.
    void ended(pid_t pid);
    // A run's exit frees its record (never claims the exit).
    bool on_child_exit(ChildExit& exit) override {
        if (exit.service) {
            ended(exit.pid);
        }
        return false;
    }

private:
    int m_fd = -1;
    std::string m_path;
    std::unordered_map<pid_t, std::size_t> m_slot_of;
    std::vector<pid_t> m_pid_of;  // by slot; 0: free
};

// Start-up, with the control socket bound (no live pkitd serves this configuration):
// opens the records at `path` and ends the runs a pkitd that died left in them, each
// step logged with `log`. False when a live pkitd holds them (pkitd must exit 3); a
// file that cannot be used otherwise is warned about and pkitd goes on without it.
bool take_over_records(RunRecords& records, const std::string& path,
                       const std::function<void(std::string_view, const std::string&)>& log);

}  // namespace pkit::shell
