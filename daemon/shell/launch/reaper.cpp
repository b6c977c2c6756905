#include "daemon/shell/launch/reaper.hpp"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <limits>

namespace pkit::shell {

Reaper::Reaper(uv_loop_t* loop, Callback callback, std::size_t batch, ReapPace pace)
    : m_signal(this),
      m_more(loop, [this] { reap_batch(); }),
      m_put_off(loop),
      m_callback(std::move(callback)),
      m_batch(std::max<std::size_t>(1, batch)),
      m_pace(pace) {
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
    bool more = false;
    const std::size_t reaped = reap(m_batch, uv_hrtime() + m_pace.budget_ns, more);
    if (more) {
        m_more.schedule();
    }
    return reaped;
}

std::size_t Reaper::reap_now() {
    m_next_scan_ns = 0;
    bool more = false;
    return reap(std::numeric_limits<std::size_t>::max(), std::numeric_limits<std::uint64_t>::max(),
                more);
}

void Reaper::expect(pid_t pid) {
    if (pid > 0) {
        m_expected.push_back({pid, 0});
        // Its SIGCHLD brings a reap, unless it came before the pipes' end was seen and
        // found the scan put off: then the next turn waits for it.
        if (m_put_off.active()) {
            m_more.schedule();
        }
    }
}

std::size_t Reaper::reap(std::size_t limit, std::uint64_t until_ns, bool& more) {
    const std::size_t by_pid = reap_expected(until_ns, more);
    m_by_pid_since_scan = m_by_pid_since_scan || by_pid > 0;
    if (more) {
        return by_pid;
    }
    const std::uint64_t now = uv_hrtime();
    if (now < m_next_scan_ns) {
        if (!m_put_off.active()) {
            const std::uint64_t ms = (m_next_scan_ns - now + 999'999) / 1'000'000;
            m_put_off.start(ms, [this] { reap_batch(); });
        }
        return by_pid;
    }
    m_put_off.stop();
    ScanCost cost;
    const std::size_t found = scan(limit, until_ns, cost, more);
    // A costly scan puts the next off when it found nothing, or when children were reaped
    // by pid since the one before: most runs end that way, and the scan only finds them
    // sooner. One that found children while nothing else reaped is not put off: it is the
    // only way to reap runs whose pipes never ended (a leftover of their group holds them).
    const bool may_put_off = found == 0 || m_by_pid_since_scan;
    const std::uint64_t spent = found == 0 ? cost.fruitless_ns : cost.total_ns;
    m_next_scan_ns =
        may_put_off && spent >= m_pace.cheap_ns ? uv_hrtime() + m_pace.put_off_factor * spent : 0;
    m_by_pid_since_scan = false;
    return by_pid + found;
}

void Reaper::deliver(pid_t pid, int status) {
    try {
        m_callback(pid, status);
    } catch (...) {
        // A failing consumer must not stop the reaping of the other children.
    }
}

std::size_t Reaper::reap_expected(std::uint64_t until_ns, bool& more) {
    std::size_t reaped = 0;
    std::size_t kept = 0;
    // Indices, not iterators: a callback may expect() more, appended and seen here too.
    for (std::size_t k = 0; k < m_expected.size(); ++k) {
        Expected expected = m_expected[k];
        const pid_t pid = expected.pid;
        int status = 0;
        pid_t got = 0;
        if (!more) {
            do {
                got = waitpid(pid, &status, WNOHANG);
            } while (got < 0 && errno == EINTR);
            ++expected.tries;
        }
        if (got == 0) {
            // Still running (or the turn's time is up): later, unless it has had its tries.
            if (expected.tries < k_expect_tries) {
                m_expected[kept++] = expected;
            }
            continue;
        }
        if (got < 0) {
            continue;  // ECHILD: reaped by a scan meanwhile
        }
        ++reaped;
        deliver(pid, status);
        more = uv_hrtime() >= until_ns;
    }
    m_expected.resize(kept);
    return reaped;
}

std::size_t Reaper::scan(std::size_t limit, std::uint64_t until_ns, ScanCost& cost, bool& more) {
    std::size_t reaped = 0;
    while (reaped < limit) {
        int status = 0;
        const std::uint64_t before = uv_hrtime();
        pid_t pid = waitpid(-1, &status, WNOHANG);
        const std::uint64_t after = uv_hrtime();
        cost.total_ns += after - before;
        if (pid < 0 && errno == EINTR) {
            continue;
        }
        if (pid <= 0) {
            // 0: children remain but none has exited; ECHILD: no children at all.
            cost.fruitless_ns = after - before;
            return reaped;
        }
        ++reaped;
        deliver(pid, status);
        if (uv_hrtime() >= until_ns) {
            break;
        }
    }
    more = true;  // the batch is full or the turn's time is up: maybe more have ended
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
