#include "daemon/shell/cgroup/run_cgroups.hpp"

#include <signal.h>

#include <algorithm>

#include "daemon/shell/launch/launcher.hpp"

namespace pkit::shell {

RunCgroups::RunCgroups(uv_loop_t* loop, CgroupTree& tree, Emptied emptied)
    : m_loop(loop), m_tree(tree), m_emptied(std::move(emptied)) {}

std::expected<std::string, std::string> RunCgroups::prepare(std::size_t service,
                                                            const std::string& name) {
    if (service < m_made.size() && m_made[service]) {
        return m_tree.dir(name);
    }
    auto dir = m_tree.make(name);
    if (dir) {
        if (service >= m_made.size()) {
            m_made.resize(service + 1);
        }
        m_made[service] = true;
    }
    return dir;
}

void RunCgroups::forget(std::size_t service) {
    if (service < m_made.size()) {
        m_made[service] = false;
    }
    if (service < m_cpu_base.size()) {
        m_cpu_base[service].reset();
    }
    if (service < m_oom_base.size()) {
        m_oom_base[service].reset();
    }
}

bool RunCgroups::hold(std::size_t service, const std::string& name, pid_t pid, int wait_status,
                      int signo, core::TimePoint kill_at) {
    // Most runs leave nothing behind: one read of cgroup.events says so.
    if (!m_tree.populated(name).value_or(false)) {
        return false;
    }
    auto held = std::make_unique<Held>(Held{service, name, pid, wait_status, kill_at});
    held->watch = std::make_unique<UvHandle<uv_fs_event_t>>(this);
    // Read again once watched: an emptying between the first read and the watch cannot
    // be missed.
    std::string events = m_tree.dir(name) + "/cgroup.events";
    if (held->watch->init(uv_fs_event_init, m_loop) != 0 ||
        uv_fs_event_start(held->watch->get(), &RunCgroups::on_event, events.c_str(), 0) != 0) {
        return false;  // not watchable: the run ends with its main process, as without
    }
    if (!m_tree.populated(name).value_or(false)) {
        return false;
    }
    // A run paused when its main process was killed: what is left is frozen, and could
    // act on its stop signal only once thawed.
    (void)m_tree.freeze(name, false);
    if (signo != SIGKILL) {
        if (stop_class_signal(signo)) {
            m_tree.signal(name, SIGCONT);
        }
        m_tree.signal(name, signo);
        if (!stop_class_signal(signo) && signo != SIGCONT) {
            m_tree.signal(name, SIGCONT);
        }
    } else {
        m_tree.kill(name);
        held->killed = true;
    }
    m_held.push_back(std::move(held));
    return true;
}

bool RunCgroups::holding(std::size_t service) const {
    return std::ranges::any_of(m_held, [service](const auto& h) { return h->service == service; });
}

std::optional<std::string> RunCgroups::any_held() const {
    if (m_held.empty()) {
        return std::nullopt;
    }
    return m_held.front()->name;
}

void RunCgroups::on_event(uv_fs_event_t* handle, const char*, int, int) {
    auto* self = static_cast<RunCgroups*>(handle->data);
    if (self == nullptr) {
        return;
    }
    auto it = std::ranges::find_if(self->m_held,
                                   [handle](const auto& h) { return h->watch->get() == handle; });
    if (it != self->m_held.end()) {
        try {
            self->check((*it)->service);
        } catch (...) {
            // Never into libuv; the exit stays held until the kill deadline's check.
        }
    }
}

void RunCgroups::check(std::size_t service) {
    auto it =
        std::ranges::find_if(m_held, [service](const auto& h) { return h->service == service; });
    if (it == m_held.end() || m_tree.populated((*it)->name).value_or(true)) {
        return;
    }
    std::unique_ptr<Held> held = std::move(*it);
    m_held.erase(it);
    m_emptied(held->service, held->pid, held->wait_status);
}

void RunCgroups::kill_held() {
    for (auto& held : m_held) {
        held->killed = true;
        m_tree.kill(held->name);
    }
}

void RunCgroups::run_started(std::size_t service, const std::string& name) {
    if (service >= m_cpu_base.size()) {
        m_cpu_base.resize(service + 1);
        m_oom_base.resize(service + 1);
    }
    m_cpu_base[service] = m_tree.cpu_usage_usec(name);
    m_oom_base[service] = m_tree.oom_kills(name);
}

bool RunCgroups::oom_killed_since_start(std::size_t service, const std::string& name) const {
    if (service >= m_oom_base.size() || !m_oom_base[service]) {
        return false;
    }
    auto now = m_tree.oom_kills(name);
    return now && *now > *m_oom_base[service];
}

std::pair<std::optional<std::uint64_t>, std::optional<std::uint64_t>> RunCgroups::run_bases(
    std::size_t service) const {
    if (service >= m_cpu_base.size()) {
        return {};
    }
    return {m_cpu_base[service], m_oom_base[service]};
}

void RunCgroups::restore_run_bases(std::size_t service, std::optional<std::uint64_t> usage_usec,
                                   std::optional<std::uint64_t> oom_kill) {
    if (service >= m_cpu_base.size()) {
        m_cpu_base.resize(service + 1);
        m_oom_base.resize(service + 1);
    }
    m_cpu_base[service] = usage_usec;
    m_oom_base[service] = oom_kill;
}

RunCgroupRead RunCgroups::read_of(std::size_t service, const std::string& name) const {
    RunCgroupRead read;
    read.dir = m_tree.dir(name);
    if (service < m_cpu_base.size()) {
        read.cpu_base_usec = m_cpu_base[service];
    }
    return read;
}

std::optional<core::TimePoint> RunCgroups::next_deadline() const {
    std::optional<core::TimePoint> next;
    for (const auto& held : m_held) {
        if (!held->killed && (!next || held->kill_at < *next)) {
            next = held->kill_at;
        }
    }
    return next;
}

void RunCgroups::on_time(core::TimePoint now) {
    for (auto& held : m_held) {
        if (!held->killed && held->kill_at <= now) {
            held->killed = true;
            m_tree.kill(held->name);
        }
    }
}

}  // namespace pkit::shell
