#pragma once
// The real pkitd under test: started in its own process group with the case's temp dir
// as its config dir and socket directory, its log (stderr) and forwarded output
// (stdout) captured, and killed with everything it started when the case ends.

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/harness_client.hpp"
#include "tests/integration/harness_files.hpp"

namespace pkit::itest {

// Where pkitd's stdout goes.
enum class StdoutMode {
    file,          // DIR/pkitd.out, read by out()
    drained_pipe,  // a pipe a thread reads continuously (bytes counted, tail kept)
    stalled_pipe,  // a pipe nobody reads: pkitd's forwarding must not block on it
};

struct DaemonOptions {
    std::vector<std::string> extra_args;  // after --config/--socket
    std::vector<std::string> wrapper;     // run as WRAPPER... PKITD_BIN ... (e.g. unshare)
    StdoutMode stdout_mode = StdoutMode::file;
    std::string config_dir;  // default: the temp dir
    std::string socket;      // default: DIR/pkitd.sock
    // Starts pkitd with fds 0, 1 and 2 closed (`pkitd <&- >&- 2>&-`): log() and out()
    // then stay empty.
    bool closed_stdio = false;
    // Extra KEY=VALUE entries for pkitd's environment (NOTIFY_SOCKET, XDG_RUNTIME_DIR).
    std::vector<std::string> env;
    // Start pkitd without --socket (it picks its default); `socket` above must then
    // say where that is, for the harness to reach it.
    bool omit_socket_arg = false;
    // A cgroup directory pkitd starts in (harness_cgroup.hpp); empty: the tests' own.
    std::string cgroup;
};

class Daemon {
public:
    explicit Daemon(const TempDir& dir, DaemonOptions options = {});
    ~Daemon();
    Daemon(const Daemon&) = delete;
    Daemon& operator=(const Daemon&) = delete;

    // Waits until `ping` answers on the socket; fails the case (with the log) when
    // pkitd exits first or the deadline passes.
    void wait_ready(std::chrono::milliseconds timeout = std::chrono::seconds(10));
    // A new connection to the socket.
    Client client() const { return Client(m_socket); }

    // SIGTERM, then waits for the exit; returns the exit status (128+N for a signal).
    // Fails the case when pkitd does not exit within `timeout`.
    int stop(std::chrono::milliseconds timeout = std::chrono::seconds(15));
    // Sends `sig` to pkitd (the wrapper's child when there is a wrapper: see target_pid).
    void signal(int sig) const;
    // Waits for the exit; nullopt when still running at the deadline.
    std::optional<int> wait_exit(std::chrono::milliseconds timeout);
    bool exited() const { return m_exit_status.has_value(); }
    std::optional<int> exit_status() const { return m_exit_status; }

    // The PID the harness forked (pkitd itself, or the wrapper).
    pid_t pid() const { return m_pid; }
    // pkitd's own PID: pid() without a wrapper, else the wrapper's only child.
    pid_t target_pid() const;
    const std::string& socket() const { return m_socket; }
    // The case's marker (the temp dir path).
    const std::string& marker() const { return m_marker; }

    // pkitd's stderr so far: its log.
    std::string log() const;
    // pkitd's stdout so far (file mode), or the last 64 KiB of it (drained_pipe).
    std::string out() const;
    // Bytes read from the drained pipe so far.
    std::size_t out_bytes() const { return m_drained_bytes.load(); }

private:
    void drain(int fd);
    std::optional<int> reap(bool block);

    std::string m_marker;
    std::string m_socket;
    std::string m_log_path;
    std::string m_out_path;
    StdoutMode m_stdout_mode;
    bool m_wrapped = false;
    pid_t m_pid = -1;
    std::optional<int> m_exit_status;
    int m_stdout_read_fd = -1;
    std::thread m_drainer;
    std::atomic<bool> m_stop_draining{false};
    std::atomic<std::size_t> m_drained_bytes{0};
    mutable std::mutex m_tail_mutex;
    std::string m_tail;
};

}  // namespace pkit::itest
