#include "daemon/core/supervisor.hpp"

#include <algorithm>
#include <csignal>
#include <queue>

namespace pkit::core {

namespace {

// Kahn's algorithm with the smallest index (name order) first among the ready ones.
// The loader has rejected cycles; should one slip through, the rest follow in name
// order rather than being lost.
std::vector<std::size_t> topological_order(const std::vector<std::vector<std::size_t>>& deps,
                                           const std::vector<std::vector<std::size_t>>& rdeps) {
    const std::size_t n = deps.size();
    std::vector<std::size_t> pending(n);
    std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
    for (std::size_t i = 0; i < n; ++i) {
        pending[i] = deps[i].size();
        if (pending[i] == 0) {
            ready.push(i);
        }
    }
    std::vector<std::size_t> order;
    std::vector<bool> placed(n, false);
    while (order.size() < n) {
        if (ready.empty()) {
            for (std::size_t i = 0; i < n; ++i) {
                if (!placed[i]) {
                    ready.push(i);
                    break;
                }
            }
        }
        std::size_t i = ready.top();
        ready.pop();
        if (placed[i]) {
            continue;
        }
        placed[i] = true;
        order.push_back(i);
        for (std::size_t j : rdeps[i]) {
            if (pending[j] > 0 && --pending[j] == 0) {
                ready.push(j);
            }
        }
    }
    return order;
}

}  // namespace

Supervisor::Supervisor(config::Tree tree, std::function<double()> random01)
    : m_daemon(std::move(tree.daemon)), m_random01(std::move(random01)) {
    const std::size_t n = tree.services.size();
    std::vector<std::optional<std::string>> groups(n);
    // tree.daemon has been moved into m_daemon by now: look the groups up there.
    for (const config::GroupSpec& g : m_daemon.groups) {
        for (std::size_t i = 0; i < n; ++i) {
            const auto& members = g.members;
            if (std::find(members.begin(), members.end(), tree.services[i].name) !=
                members.end()) {
                groups[i] = g.name;
            }
        }
    }
    for (std::size_t i = 0; i < n; ++i) {
        m_services.push_back(
            std::make_unique<Service>(std::move(tree.services[i]), i, std::move(groups[i])));
    }
    m_dependencies.resize(n);
    m_dependents.resize(n);
    auto add_edge = [&](std::size_t before, std::size_t after) {
        auto& deps = m_dependencies[after];
        if (before != after && std::find(deps.begin(), deps.end(), before) == deps.end()) {
            deps.push_back(before);
            m_dependents[before].push_back(after);
        }
    };
    for (std::size_t i = 0; i < n; ++i) {
        for (const std::string& name : m_services[i]->spec().after) {
            if (auto dep = find(name)) {
                add_edge(*dep, i);
            }
        }
    }
    // A group's members start in order: each after the one before it.
    for (const config::GroupSpec& group : m_daemon.groups) {
        for (std::size_t k = 1; k < group.members.size(); ++k) {
            auto before = find(group.members[k - 1]);
            auto after = find(group.members[k]);
            if (before && after) {
                add_edge(*before, *after);
            }
        }
    }
    m_order = topological_order(m_dependencies, m_dependents);
    m_stop_sent.assign(n, false);
}

std::optional<std::size_t> Supervisor::find(std::string_view name) const {
    // Services are in name order (the loader sorts them): binary search.
    auto it = std::lower_bound(m_services.begin(), m_services.end(), name,
                               [](const auto& s, std::string_view n) { return s->name() < n; });
    if (it != m_services.end() && (*it)->name() == name) {
        return static_cast<std::size_t>(it - m_services.begin());
    }
    for (const auto& s : m_services) {  // not sorted after all: fall back to a scan
        if (s->name() == name) {
            return s->index();
        }
    }
    return std::nullopt;
}

std::optional<std::size_t> Supervisor::service_of(pid_t pid) const {
    auto it = m_runs.find(pid);
    if (it == m_runs.end()) {
        return std::nullopt;
    }
    return it->second.first;
}

void Supervisor::start(Now now) {
    for (std::size_t i : m_order) {
        if (m_services[i]->spec().autostart) {
            m_services[i]->want_up(now, m_actions, true);
        }
    }
    settle(now);
}

void Supervisor::on_spawned(std::size_t service, std::uint64_t run, pid_t pid, Now now) {
    m_runs[pid] = {service, run};
    m_services[service]->on_spawned(run, pid, now, m_actions);
    settle(now);
}

void Supervisor::on_launch_failed(std::size_t service, std::uint64_t run,
                                  const LaunchFailure& failure, Now now) {
    std::uint64_t before = m_services[service]->crashes();
    m_services[service]->on_launch_failed(run, failure, now, m_actions, draw());
    note_crashes(service, before, now);
    settle(now);
}

bool Supervisor::on_exit(pid_t pid, int wait_status, Now now) {
    auto it = m_runs.find(pid);
    if (it == m_runs.end()) {
        return false;
    }
    auto [service, run] = it->second;
    m_runs.erase(it);
    std::size_t first_new = m_actions.size();
    std::uint64_t before = m_services[service]->crashes();
    m_services[service]->on_exit(run, wait_status, now, m_actions, draw());
    note_crashes(service, before, now);
    if (m_shutdown_deadline) {
        // Leftovers of the group must be gone by the shutdown deadline too.
        Duration left = std::max(Duration::zero(), *m_shutdown_deadline - now.mono);
        for (std::size_t k = first_new; k < m_actions.size(); ++k) {
            if (auto* cleanup = std::get_if<CleanupGroupAction>(&m_actions[k])) {
                cleanup->grace = std::min(cleanup->grace, left);
            }
        }
    }
    settle(now);
    return true;
}

void Supervisor::on_time(Now now) {
    if (m_shutdown_deadline && now.mono >= *m_shutdown_deadline) {
        m_shutdown_deadline.reset();
        for (auto& s : m_services) {
            s->kill_now(m_actions);
        }
    }
    for (auto& s : m_services) {
        auto due = s->next_deadline();
        if (due && *due <= now.mono) {
            s->on_time(now, m_actions);
        }
    }
    settle(now);
}

void Supervisor::on_probe_result(std::size_t service, std::uint64_t run, ProbePurpose purpose,
                                 bool ok, Now now) {
    m_services[service]->on_probe_result(run, purpose, ok, now, m_actions);
    settle(now);
}

void Supervisor::on_notify(std::size_t service, std::uint64_t run, const NotifyMessage& message,
                           Now now) {
    m_services[service]->on_notify(run, message, now, m_actions);
    settle(now);
}

void Supervisor::on_output(std::size_t service, std::uint64_t run, Stream stream,
                           std::string_view text, double wall) {
    m_services[service]->record_output(run, stream, text, wall);
}

void Supervisor::start_service(std::size_t service, Now now) {
    if (m_shutting_down) {
        return;
    }
    m_services[service]->want_up(now, m_actions, true);
    settle(now);
}

void Supervisor::stop_service(std::size_t service, Now now) {
    m_services[service]->stop(now, m_actions, AfterStop::stay_stopped, std::nullopt);
    settle(now);
}

void Supervisor::restart_service(std::size_t service, Now now) {
    if (m_shutting_down) {
        return;
    }
    m_services[service]->stop(now, m_actions, AfterStop::relaunch, std::nullopt);
    settle(now);
}

void Supervisor::shutdown(Now now) {
    if (m_shutting_down) {
        return;
    }
    m_shutting_down = true;
    for (auto& s : m_services) {
        s->forbid_restarts();
    }
    if (m_daemon.shutdown_timeout > Duration::zero()) {
        m_shutdown_deadline = now.mono + m_daemon.shutdown_timeout;
    }
    settle(now);
}

bool Supervisor::dependencies_satisfied(std::size_t service) const {
    return std::all_of(m_dependencies[service].begin(), m_dependencies[service].end(),
                       [&](std::size_t d) { return m_services[d]->satisfies_dependents(); });
}

std::vector<std::string> Supervisor::unsatisfied_dependencies(std::size_t service) const {
    std::vector<std::string> names;
    for (std::size_t d : m_dependencies[service]) {
        if (!m_services[d]->satisfies_dependents()) {
            names.push_back(m_services[d]->name());
        }
    }
    return names;
}

void Supervisor::note_crashes(std::size_t service, std::uint64_t before, Now now) {
    if (!m_daemon.storm.enabled()) {
        return;
    }
    for (std::uint64_t k = before; k < m_services[service]->crashes(); ++k) {
        if (m_daemon_storm.add_crash(now.mono, m_daemon.storm)) {
            m_daemon_storm_until = now.mono + *m_daemon.storm.pause;
            ++m_daemon_storm_pauses;
            Event e;
            e.type = EventType::storm_pause;
            e.at = now.wall;
            e.delay = *m_daemon.storm.pause;
            e.reason = "daemon-wide: crashes of all services reached the threshold " +
                       std::to_string(m_daemon.storm.threshold);
            m_actions.push_back(EmitAction{std::move(e)});
        }
    }
}

void Supervisor::settle(Now now) {
    if (m_shutting_down) {
        settle_shutdown(now);
        return;
    }
    if (m_daemon_storm_until && now.mono < *m_daemon_storm_until) {
        // Every restart pending now or decided during the pause waits for its end.
        for (auto& s : m_services) {
            s->hold_until(*m_daemon_storm_until);
        }
    }
    for (std::size_t i : m_order) {
        Service& s = *m_services[i];
        if (s.state() == State::waiting && s.desired_up() && dependencies_satisfied(i)) {
            s.launch(now, m_actions);
        }
    }
}

// Stops each service once everything that starts after it has stopped: dependents
// first, and services with no order between them at the same time.
void Supervisor::settle_shutdown(Now now) {
    for (auto it = m_order.rbegin(); it != m_order.rend(); ++it) {
        std::size_t i = *it;
        if (m_stop_sent[i]) {
            continue;
        }
        bool dependents_down =
            std::all_of(m_dependents[i].begin(), m_dependents[i].end(), [&](std::size_t j) {
                return m_stop_sent[j] && !m_services[j]->has_process();
            });
        if (dependents_down) {
            m_stop_sent[i] = true;
            m_services[i]->stop(now, m_actions, AfterStop::shutdown, m_shutdown_deadline);
        }
    }
    bool all_down = std::all_of(m_services.begin(), m_services.end(),
                                [](const auto& s) { return !s->has_process(); });
    bool all_sent = std::all_of(m_stop_sent.begin(), m_stop_sent.end(), [](bool b) { return b; });
    if (all_down && all_sent && !m_exit_sent) {
        m_exit_sent = true;
        m_actions.push_back(ExitAction{0});
    }
}

std::optional<TimePoint> Supervisor::next_deadline() const {
    std::optional<TimePoint> next = m_shutdown_deadline;
    for (const auto& s : m_services) {
        if (auto due = s->next_deadline()) {
            next = next ? std::min(*next, *due) : *due;
        }
    }
    return next;
}

std::vector<Action> Supervisor::take_actions() {
    std::vector<Action> taken;
    taken.swap(m_actions);
    return taken;
}

}  // namespace pkit::core
