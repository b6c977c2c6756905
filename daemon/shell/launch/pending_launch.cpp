#include "daemon/shell/launch/pending_launch.hpp"

#include <algorithm>
#include <utility>

#include "daemon/shell/launch/launch_child.hpp"

namespace pkit::shell {

PendingLaunches::Entry::Entry(PendingLaunches* owner_, std::size_t service_, std::uint64_t run_,
                              StartedLaunch started_)
    : owner(owner_), service(service_), run(run_), started(std::move(started_)), poll(this) {}

PendingLaunches::Entry::~Entry() {
    // The poll goes first: an fd must not be closed while epoll still watches it.
    poll.reset();
    close_fds({started.report_fd, started.stdout_fd, started.stderr_fd});
}

PendingLaunches::PendingLaunches(uv_loop_t* loop, Callback callback, AfterLoop after_loop)
    : m_loop(loop),
      m_callback(std::move(callback)),
      m_after_loop(std::move(after_loop)),
      m_report_early(loop, [this] {
          if (report_failed_early() > 0 && m_after_loop) {
              m_after_loop();
          }
      }) {}

PendingLaunches::~PendingLaunches() = default;

void PendingLaunches::add(std::size_t service, std::uint64_t run, StartedLaunch started) {
    pid_t pid = started.pid;
    auto entry = std::make_unique<Entry>(this, service, run, std::move(started));
    Entry* raw = entry.get();
    m_pending[pid] = std::move(entry);
    if (raw->poll.init(uv_poll_init, m_loop, raw->started.report_fd) != 0 ||
        uv_poll_start(raw->poll.get(), UV_READABLE, &PendingLaunches::on_poll) != 0) {
        // Cannot watch it: wait for this one child here, as launch() would.
        resolve(pid);
    }
}

void PendingLaunches::add_failed(std::size_t service, std::uint64_t run, LaunchFailure failure) {
    m_failed_early.push_back(FailedEarly{service, run, std::move(failure)});
    m_report_early.schedule();
}

std::size_t PendingLaunches::report_failed_early() {
    std::vector<FailedEarly> failed;
    failed.swap(m_failed_early);
    for (FailedEarly& f : failed) {
        try {
            m_callback(f.service, f.run, std::unexpected(std::move(f.failure)));
        } catch (...) {
        }
    }
    return failed.size();
}

void PendingLaunches::on_poll(uv_poll_t* handle, int /*status*/, int /*events*/) {
    auto* entry = static_cast<Entry*>(handle->data);
    if (entry == nullptr) {
        return;
    }
    // Readable or an error: either way the report can be read now. Never throw into
    // libuv.
    PendingLaunches* self = entry->owner;
    try {
        self->resolve(entry->started.pid);
        if (self->m_after_loop) {
            self->m_after_loop();
        }
    } catch (...) {
    }
}

bool PendingLaunches::resolve(pid_t pid) {
    auto it = m_pending.find(pid);
    if (it == m_pending.end()) {
        return false;
    }
    std::unique_ptr<Entry> entry = std::move(it->second);
    m_pending.erase(it);
    entry->poll.reset();  // before the read closes the report fd
    StartedLaunch& started = entry->started;
    LaunchOutcome outcome = *read_launch_report(started, true);
    std::expected<Launched, LaunchFailure> result =
        outcome ? std::expected<Launched, LaunchFailure>(
                      Launched{started.pid, std::exchange(started.stdout_fd, -1),
                               std::exchange(started.stderr_fd, -1)})
                : std::unexpected(std::move(outcome.error()));
    if (!result) {
        m_failed.push_back(pid);
    }
    bool failed = !result;
    try {
        m_callback(entry->service, entry->run, std::move(result));
    } catch (...) {
    }
    return failed;
}

bool PendingLaunches::on_exit(pid_t pid) {
    if (m_pending.contains(pid)) {
        resolve(pid);
    }
    auto failed = std::find(m_failed.begin(), m_failed.end(), pid);
    if (failed == m_failed.end()) {
        return false;
    }
    m_failed.erase(failed);
    return true;
}

bool PendingLaunches::knows(pid_t pid) const {
    return m_pending.contains(pid) || std::ranges::find(m_failed, pid) != m_failed.end();
}

std::size_t PendingLaunches::resolve_all() {
    m_report_early.cancel();
    std::size_t resolved = report_failed_early();
    // The callback may add launches; those are resolved too.
    while (!m_pending.empty()) {
        resolve(m_pending.begin()->first);
        ++resolved;
    }
    return resolved;
}

std::size_t PendingLaunches::resolve_service(std::size_t service) {
    std::vector<FailedEarly> failed;
    for (auto it = m_failed_early.begin(); it != m_failed_early.end();) {
        if (it->service == service) {
            failed.push_back(std::move(*it));
            it = m_failed_early.erase(it);
        } else {
            ++it;
        }
    }
    for (FailedEarly& f : failed) {
        try {
            m_callback(f.service, f.run, std::unexpected(std::move(f.failure)));
        } catch (...) {
        }
    }
    std::vector<pid_t> pids;
    for (const auto& [pid, entry] : m_pending) {
        if (entry->service == service) {
            pids.push_back(pid);
        }
    }
    for (pid_t pid : pids) {
        resolve(pid);
    }
    return failed.size() + pids.size();
}

}  // namespace pkit::shell
