// Exec probes: the probe's argv launched like a run of its service (environment, PATH
// lookup, cwd, user, group; a new session, so its own process group), its main process
// reaped by the daemon's Reaper and handed over through ProbeRunner::on_child_exit.
//
// The launcher gives every child stdout/stderr pipes. A probe's output is of no use to
// anyone, but closing our ends would make a chatty probe (`curl -f` printing a page)
// die of SIGPIPE and fail, so the pipes are drained into a shared scratch buffer
// instead: the probe sees the same as writing to /dev/null.

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>

#include "daemon/shell/launch/launcher.hpp"
#include "daemon/shell/probes/probe_attempt.hpp"

namespace pkit::shell {

namespace {

// Reads a pipe to EOF and throws the bytes away.
class Drain {
public:
    // Reads into `scratch`, which outlives every Drain (the runner's buffer).
    explicit Drain(uv_buf_t scratch) : m_pipe(this), m_scratch(scratch) {}

    Drain(const Drain&) = delete;
    Drain& operator=(const Drain&) = delete;

    // Takes ownership of `fd`, also on failure.
    void start(uv_loop_t* loop, int fd) {
        if (m_pipe.init(uv_pipe_init, loop, 0) != 0 || uv_pipe_open(m_pipe.get(), fd) != 0) {
            close(fd);
            m_pipe.reset();
            return;
        }
        if (uv_read_start(m_pipe.as_stream(), &Drain::on_alloc, &Drain::on_read) != 0) {
            m_pipe.reset();
        }
    }

private:
    static void on_alloc(uv_handle_t* handle, std::size_t, uv_buf_t* buf) {
        auto* self = static_cast<Drain*>(handle->data);
        *buf = self != nullptr ? self->m_scratch : uv_buf_init(nullptr, 0);
    }

    static void on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t*) {
        auto* self = static_cast<Drain*>(stream->data);
        if (self != nullptr && nread < 0) {
            self->m_pipe.reset();  // EOF or error: nothing more to drain
        }
    }

    UvHandle<uv_pipe_t> m_pipe;
    uv_buf_t m_scratch;
};

std::string describe_exit(int wait_status) {
    if (WIFEXITED(wait_status)) {
        return "exit " + std::to_string(WEXITSTATUS(wait_status));
    }
    if (WIFSIGNALED(wait_status)) {
        const char* name = sigabbrev_np(WTERMSIG(wait_status));
        return std::string("killed by ") + (name != nullptr
                                                ? std::string("SIG") + name
                                                : std::to_string(WTERMSIG(wait_status)));
    }
    return "ended with status " + std::to_string(wait_status);
}

class ExecAttempt final : public ProbeAttempt {
public:
    ExecAttempt(ProbeRunner& runner, const ProbeRequest& request)
        : ProbeAttempt(runner, request),
          m_spec(request.service_spec != nullptr ? *request.service_spec : config::ServiceSpec{}),
          m_stdout(scratch()),
          m_stderr(scratch()) {
        m_spec.command = request.probe->argv;
        if (request.daemon != nullptr) {
            m_daemon.env = request.daemon->env;
            m_daemon.env_files = request.daemon->env_files;
        }
    }

    // A probe still running when its attempt ends (timed out, cancelled, runner gone)
    // loses its whole group; the pid stays claimed until the reaper offers it.
    ~ExecAttempt() override {
        if (m_pid > 0 && !m_reaped) {
            kill(-m_pid, SIGKILL);
            adopt_unreaped(m_pid);
        }
    }

    pid_t pid() const override { return m_reaped ? -1 : m_pid; }

    void on_exit(int wait_status) override {
        m_reaped = true;
        // The main process is gone; whatever it left in its group goes too, so probes
        // never pile up behind a probe that "finished".
        kill(-m_pid, SIGKILL);
        bool ok = WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
        complete(ok, describe_exit(wait_status));
    }

private:
    void begin() override {
        auto launched = launch(LaunchRequest{&m_spec, run(), {}, {}, &m_daemon});
        // The copies are only needed for the launch.
        m_spec = config::ServiceSpec{};
        m_daemon = config::DaemonSpec{};
        if (!launched) {
            complete(false, std::move(launched.error().message));
            return;
        }
        m_pid = launched->pid;
        m_stdout.start(loop(), launched->stdout_fd);
        m_stderr.start(loop(), launched->stderr_fd);
    }

    config::ServiceSpec m_spec;
    config::DaemonSpec m_daemon;  // its env and env_files only
    pid_t m_pid = -1;
    bool m_reaped = false;
    Drain m_stdout;
    Drain m_stderr;
};

}  // namespace

std::unique_ptr<ProbeAttempt> make_exec_attempt(ProbeRunner& runner, const ProbeRequest& request) {
    if (request.probe->argv.empty()) {
        return make_failed_attempt(runner, request, "exec probe without a command");
    }
    return std::make_unique<ExecAttempt>(runner, request);
}

}  // namespace pkit::shell
