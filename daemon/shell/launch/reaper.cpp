#include "daemon/shell/launch/reaper.hpp"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <limits>

namespace pkit::shell {

Reaper::Reaper(uv_loop_t* loop, Callback callback, std::size_t batch)
    : m_signal(this),
      m_more(loop, [this] { reap_batch(); }),
      m_callback(std::move(callback)),
      m_batch(std::max<std::size_t>(1, batch)) {
    m_signal.init(uv_signal_init, loop);
}

std::expected<void, int> Reaper::start() {
    if (!m_signal.initialized()) {
        return std::unexpected(UV_EINVAL);
    }
    int rc = uv_signal_start(m_signal.get(), &Reaper::on_signal, SIGCHLD);
    if (rc != 0) {
        return std::unexpected(rc);
    }
    return {};
}

std::size_t Reaper::reap_batch() {
    std::size_t reaped = reap(m_batch);
    if (reaped == m_batch) {
        m_more.schedule();
    }
    return reaped;
}

std::size_t Reaper::reap_now() {
    return reap(std::numeric_limits<std::size_t>::max());
}

std::size_t Reaper::reap(std::size_t limit) {
    std::size_t reaped = 0;
    while (reaped < limit) {
        int status = 0;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid < 0 && errno == EINTR) {
            continue;
        }
        if (pid <= 0) {
            // 0: children remain but none has exited; ECHILD: no children at all.
            return reaped;
        }
        ++reaped;
        try {
            m_callback(pid, status);
        } catch (...) {
            // A failing consumer must not stop the reaping of the other children.
        }
    }
    return reaped;
}

void Reaper::on_signal(uv_signal_t* handle, int /*signo*/) {
    auto* self = static_cast<Reaper*>(handle->data);
    // Signals coalesce: one SIGCHLD may stand for many exits, hence a batch. While a
    // continuation is armed, it reaps at the next turn: one batch per turn.
    if (self != nullptr && !self->m_more.pending()) {
        self->reap_batch();
    }
}

std::expected<void, int> become_subreaper_unless_pid1() {
    if (getpid() == 1) {
        return {};
    }
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
        return std::unexpected(errno);
    }
    return {};
}

}  // namespace pkit::shell
