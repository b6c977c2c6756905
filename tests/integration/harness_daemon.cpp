#include "tests/integration/harness_daemon.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

#include "tests/integration/harness_doctest.hpp"
#include "tests/integration/harness_proc.hpp"
#include "tests/integration/harness_process.hpp"

namespace pkit::itest {

namespace {

constexpr std::size_t k_tail_bytes = 64 * 1024;

}  // namespace

Daemon::Daemon(const TempDir& dir, DaemonOptions options)
    : m_marker(dir.str()),
      m_socket(options.socket.empty() ? dir.file("pkitd.sock") : options.socket),
      m_log_path(dir.file("pkitd.log")),
      m_out_path(dir.file("pkitd.out")),
      m_stdout_mode(options.stdout_mode),
      m_wrapped(!options.wrapper.empty()) {
    std::vector<std::string> argv = options.wrapper;
    const std::string config = options.config_dir.empty() ? dir.str() : options.config_dir;
    argv.insert(argv.end(), {PKITD_BIN, "--config", config});
    if (!options.omit_socket_arg) {
        argv.insert(argv.end(), {"--socket", m_socket});
    }
    argv.insert(argv.end(), options.extra_args.begin(), options.extra_args.end());
    options.env.push_back("PKIT_ITEST_MARKER=" + m_marker);
    std::vector<std::string> env = child_environment(options.env);
    auto c_argv = c_strings(argv);
    auto c_env = c_strings(env);

    const int log_fd = ::open(m_log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int out_fd = -1;
    if (m_stdout_mode == StdoutMode::file) {
        out_fd = ::open(m_out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    } else {
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) != 0) {
            throw std::runtime_error("pipe2 failed");
        }
        m_stdout_read_fd = fds[0];
        out_fd = fds[1];
    }
    const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    const int cgroup_fd =
        options.cgroup.empty()
            ? -1
            : ::open((options.cgroup + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
    if (!options.cgroup.empty() && cgroup_fd < 0) {
        throw std::runtime_error("cannot open " + options.cgroup + "/cgroup.procs");
    }
    if (log_fd < 0 || out_fd < 0 || null_fd < 0) {
        throw std::runtime_error("cannot open pkitd's output files");
    }

    m_pid = ::fork();
    if (m_pid == 0) {
        // Its own process group, so that the destructor can kill pkitd (and a wrapper
        // such as unshare) at once; services get their own sessions from pkitd and are
        // found by the marker instead.
        ::setpgid(0, 0);
        if (cgroup_fd >= 0 && ::write(cgroup_fd, "0", 1) != 1) {
            ::_exit(126);
        }
        if (options.closed_stdio) {
            // The other fds are close-on-exec: pkitd starts with no descriptor at all.
            ::close(0);
            ::close(1);
            ::close(2);
        } else {
            ::dup2(null_fd, 0);
            ::dup2(out_fd, 1);
            ::dup2(log_fd, 2);
        }
        ::execvpe(c_argv[0], c_argv.data(), c_env.data());
        ::_exit(127);
    }
    ::setpgid(m_pid, m_pid);  // also in the parent: no race with kill(-pid)
    ::close(log_fd);
    ::close(out_fd);
    ::close(null_fd);
    if (cgroup_fd >= 0) {
        ::close(cgroup_fd);
    }
    if (m_stdout_mode == StdoutMode::drained_pipe) {
        m_drainer = std::thread([this] { drain(m_stdout_read_fd); });
    }
}

Daemon::~Daemon() {
    if (!m_exit_status) {
        ::kill(-m_pid, SIGKILL);
        reap(true);
    }
    // The safety net: whatever the case started and pkitd did not stop.
    for (int round = 0; round < 50 && kill_marker_processes(m_marker) > 0; ++round) {
        ::usleep(10'000);
    }
    m_stop_draining = true;
    if (m_drainer.joinable()) {
        m_drainer.join();
    }
    if (m_stdout_read_fd >= 0) {
        ::close(m_stdout_read_fd);
    }
}

void Daemon::drain(int fd) {
    char chunk[65536];
    while (!m_stop_draining) {
        pollfd pfd{fd, POLLIN, 0};
        if (::poll(&pfd, 1, 50) <= 0) {
            continue;
        }
        const ssize_t n = ::read(fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return;
        }
        m_drained_bytes += static_cast<std::size_t>(n);
        std::lock_guard lock(m_tail_mutex);
        m_tail.append(chunk, static_cast<std::size_t>(n));
        if (m_tail.size() > 2 * k_tail_bytes) {
            m_tail.erase(0, m_tail.size() - k_tail_bytes);
        }
    }
}

std::optional<int> Daemon::reap(bool block) {
    if (m_exit_status) {
        return m_exit_status;
    }
    int status = 0;
    pid_t got = 0;
    do {
        got = ::waitpid(m_pid, &status, block ? 0 : WNOHANG);
    } while (got < 0 && errno == EINTR);
    if (got == m_pid) {
        m_exit_status = decode_wait_status(status);
    }
    return m_exit_status;
}

void Daemon::wait_ready(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
        if (reap(false)) {
            FAIL("pkitd exited with status " << *m_exit_status
                                             << " before answering ping; its log:\n"
                                             << log());
        }
        if (auto client = Client::try_connect(m_socket)) {
            const json reply = client->command("ping", std::chrono::seconds(5));
            REQUIRE_MESSAGE(reply.value("ok", false), "ping failed: " << reply.dump());
            return;
        }
        ::usleep(20'000);
    }
    FAIL("pkitd did not answer ping on " << m_socket << " within " << timeout.count()
                                         << " ms; its log:\n"
                                         << log());
}

pid_t Daemon::target_pid() const {
    if (!m_wrapped) {
        return m_pid;
    }
    const auto children = children_of(m_pid);
    return children.empty() ? m_pid : children.front().pid;
}

void Daemon::signal(int sig) const {
    if (!m_exit_status) {
        ::kill(target_pid(), sig);
    }
}

std::optional<int> Daemon::wait_exit(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (!reap(false) && Clock::now() < deadline) {
        ::usleep(10'000);
    }
    return m_exit_status;
}

int Daemon::stop(std::chrono::milliseconds timeout) {
    signal(SIGTERM);
    if (!wait_exit(timeout)) {
        FAIL("pkitd did not exit within " << timeout.count() << " ms of SIGTERM; its log:\n"
                                          << log());
    }
    return *m_exit_status;
}

std::string Daemon::log() const {
    return read_file(m_log_path);
}

std::string Daemon::out() const {
    if (m_stdout_mode == StdoutMode::file) {
        return read_file(m_out_path);
    }
    std::lock_guard lock(m_tail_mutex);
    return m_tail;
}

}  // namespace pkit::itest
