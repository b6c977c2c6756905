#include "daemon/core/supervisor.hpp"

#include <algorithm>
#include <csignal>
#include <queue>

namespace pkit::core {

namespace {

// Kahn's algorithm with the first name first among the ready ones.
// The loader has rejected cycles; should one slip through, the rest follow in name
// order rather than being lost.
std::vector<std::size_t> topological_order(const std::vector<std::vector<std::size_t>>& deps,
                                           const std::vector<std::vector<std::size_t>>& rdeps,
                                           const std::vector<std::unique_ptr<Service>>& services) {
    const std::size_t n = deps.size();
    std::vector<std::size_t> pending(n);
    auto later_name = [&](std::size_t a, std::size_t b) {
        return services[a]->name() > services[b]->name();
    };
    std::priority_queue<std::size_t, std::vector<std::size_t>, decltype(later_name)> ready(
        later_name);
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
    for (config::ServiceSpec& spec : tree.services) {
        std::size_t i = m_services.size();
        m_services.push_back(std::make_unique<Service>(std::move(spec), i, std::nullopt));
        m_retired.push_back(false);
    }
    build_graph();
}

// Derives everything that follows from the live services and the groups: names, group
// membership, `after` and member-order edges, and the start order. A reload and `scale`
// call it again, so a file's name in `after` or `members` covers the instances it has.
void Supervisor::build_graph() {
    const std::size_t n = m_services.size();
    m_by_name.clear();
    for (std::size_t i = 0; i < n; ++i) {
        if (!m_retired[i]) {
            m_by_name.emplace(m_services[i]->name(), i);
        }
    }
    // A name in `after` or a group's members: the service of that name, else every
    // instance its file has now (SPEC §13: those `scale` or a reload added too), each
    // file looked up once a build.
    std::unordered_map<std::string_view, std::vector<std::size_t>> instances_of;
    std::vector<std::size_t> one;
    auto resolve = [&](const std::string& name) -> const std::vector<std::size_t>& {
        if (auto i = find(name)) {
            one.assign(1, *i);
            return one;
        }
        auto [it, fresh] = instances_of.try_emplace(name);
        if (fresh) {
            it->second = find_all(name);
        }
        return it->second;
    };
    std::vector<Group> groups;
    m_group_of.assign(n, std::nullopt);
    for (const config::GroupSpec& spec : m_daemon.groups) {
        Group group;
        // A group whose definition is unchanged keeps its intensity window and its work
        // in progress (a strategy's stop queue, a root restart): dropping that would
        // leave members stopped that nothing starts again.
        for (const Group& old : m_groups) {
            if (old.spec == spec) {
                group = old;
                group.members.clear();
                // A member the reload removed (an instance scaled away) leaves the
                // queue: the reload stops it, and nothing may start it again.
                if (!group.stop_queue.empty() && m_retired[group.stop_queue.front()]) {
                    group.front_sent = false;
                }
                std::erase_if(group.stop_queue, [&](std::size_t i) { return m_retired[i]; });
            }
        }
        group.spec = spec;
        for (const std::string& name : spec.members) {
            for (std::size_t i : resolve(name)) {
                m_group_of[i] = groups.size();
                group.members.push_back(i);
            }
        }
        groups.push_back(std::move(group));
    }
    m_groups = std::move(groups);
    for (std::size_t i = 0; i < n; ++i) {
        std::optional<std::string> name;
        if (m_group_of[i]) {
            name = m_groups[*m_group_of[i]].spec.name;
        }
        m_services[i]->set_group(std::move(name));  // reindex() below reads every service
    }

    m_dependencies.assign(n, {});
    m_dependents.assign(n, {});
    auto add_edge = [&](std::size_t before, std::size_t after) {
        m_dependencies[after].push_back(before);
        m_dependents[before].push_back(after);
    };
    // Linear in edges: a service's `after` targets are deduplicated by marking each
    // with the service; a member has one member-order edge, checked against its list.
    std::vector<std::size_t> added_for(n, n);
    for (std::size_t i = 0; i < n; ++i) {
        if (m_retired[i]) {
            continue;
        }
        for (const std::string& name : m_services[i]->spec().after) {
            for (std::size_t dep : resolve(name)) {
                if (dep != i && added_for[dep] != i) {
                    added_for[dep] = i;
                    add_edge(dep, i);
                }
            }
        }
    }
    // A group's members start in order: each after the one before it.
    for (const Group& group : m_groups) {
        for (std::size_t k = 1; k < group.members.size(); ++k) {
            std::size_t before = group.members[k - 1];
            std::size_t after = group.members[k];
            const auto& deps = m_dependencies[after];
            if (before != after && std::find(deps.begin(), deps.end(), before) == deps.end()) {
                add_edge(before, after);
            }
        }
    }
    m_order.clear();
    for (std::size_t i : topological_order(m_dependencies, m_dependents, m_services)) {
        if (!m_retired[i]) {
            m_order.push_back(i);
        }
    }
    m_stop_sent.resize(n, false);
    reindex();
}

Service& Supervisor::touch(std::size_t service) {
    if (!m_is_touched[service]) {
        m_is_touched[service] = true;
        m_touched.push_back(service);
    }
    if (m_shutting_down && !m_is_shutdown_check[service]) {
        m_is_shutdown_check[service] = true;
        m_shutdown_check.push_back(service);
    }
    return *m_services[service];
}

void Supervisor::refresh() {
    for (std::size_t i : m_touched) {
        m_is_touched[i] = false;
        const Service& s = *m_services[i];
        std::optional<TimePoint> due = s.next_deadline();
        if (due != m_deadline_of[i]) {
            if (m_deadline_of[i]) {
                m_deadlines.erase({*m_deadline_of[i], i});
            }
            if (due) {
                m_deadlines.emplace(*due, i);
            }
            m_deadline_of[i] = due;
        }
        if (m_position[i] != not_ordered) {
            if (s.state() == State::waiting) {
                m_waiting.insert(m_position[i]);
            } else {
                m_waiting.erase(m_position[i]);
            }
        }
        if (m_daemon_storm_until && !m_is_hold_pending[i]) {
            m_is_hold_pending[i] = true;
            m_hold_pending.push_back(i);
        }
    }
    m_touched.clear();
}

void Supervisor::reindex() {
    const std::size_t n = m_services.size();
    m_position.assign(n, not_ordered);
    for (std::size_t k = 0; k < m_order.size(); ++k) {
        m_position[m_order[k]] = k;
    }
    m_deadline_of.assign(n, std::nullopt);
    m_deadlines.clear();
    m_waiting.clear();
    m_is_touched.assign(n, true);
    m_touched.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
        m_touched[i] = i;
    }
    m_hold_pending.clear();
    m_is_hold_pending.assign(n, false);
    m_held_until.reset();  // the next hold looks at every service
    refresh();
}

std::optional<std::size_t> Supervisor::find(std::string_view name) const {
    auto it = m_by_name.find(name);
    if (it == m_by_name.end()) {
        return std::nullopt;
    }
    return it->second;
}

std::vector<std::size_t> Supervisor::find_all(std::string_view name) const {
    if (auto exact = find(name)) {
        return {*exact};
    }
    std::vector<std::size_t> found;
    if (name.find('@') != std::string_view::npos) {
        return found;
    }
    // Instances are numbered 1..N without gaps: scaling down removes the highest.
    std::string instance(name);
    instance += '@';
    const std::size_t prefix = instance.size();
    for (std::size_t k = 1;; ++k) {
        instance.resize(prefix);
        instance += std::to_string(k);
        auto it = m_by_name.find(instance);
        if (it == m_by_name.end()) {
            break;
        }
        found.push_back(it->second);
    }
    return found;
}

std::optional<std::size_t> Supervisor::service_of(pid_t pid) const {
    auto it = m_runs.find(pid);
    if (it == m_runs.end()) {
        return std::nullopt;
    }
    return it->second.first;
}

void Supervisor::start(Now now) {
    m_epoch = now.mono;
    for (std::size_t i : m_order) {
        if (m_services[i]->spec().autostart) {
            bring_up(i, now);
        }
    }
    settle(now);
}

void Supervisor::bring_up(std::size_t service, Now now) {
    if (m_services[service]->has_schedule()) {
        touch(service).arm(next_tick_of(service, now));
    } else {
        touch(service).want_up(now, m_actions, true);
    }
}

std::optional<Tick> Supervisor::next_tick_of(std::size_t service, Now now) const {
    const Service& s = *m_services[service];
    double after = now.wall;
    if (s.schedule().armed && s.schedule().by_wall && s.schedule().tick) {
        after = std::max(after, s.schedule().tick_wall);
    }
    return next_tick(*s.spec().schedule, now, m_epoch, after, m_zone);
}

std::vector<double> Supervisor::upcoming_ticks(std::size_t service, std::size_t count) const {
    std::vector<double> out;
    const Service& s = *m_services[service];
    if (!s.schedule().armed || !s.schedule().tick) {
        return out;
    }
    Tick tick{*s.schedule().tick, s.schedule().tick_wall, s.schedule().by_wall};
    while (out.size() < count) {
        out.push_back(tick.wall);
        auto next =
            next_tick(*s.spec().schedule, Now{tick.mono, tick.wall}, m_epoch, tick.wall, m_zone);
        if (!next) {
            break;
        }
        tick = *next;
    }
    return out;
}

void Supervisor::on_spawned(std::size_t service, std::uint64_t run, pid_t pid, Now now) {
    m_runs[pid] = {service, run};
    touch(service).on_spawned(run, pid, now, m_actions);
    settle(now);
}

void Supervisor::on_launch_failed(std::size_t service, std::uint64_t run,
                                  const LaunchFailure& failure, Now now) {
    Outcome outcome = touch(service).on_launch_failed(run, failure, now, m_actions, draw());
    after_outcome(service, outcome, now);
    settle(now);
}

bool Supervisor::on_exit(pid_t pid, const ProcessExit& exit, Now now) {
    auto it = m_runs.find(pid);
    if (it == m_runs.end()) {
        return false;
    }
    auto [service, run] = it->second;
    m_runs.erase(it);
    // Leftovers of the group must be gone by the shutdown deadline too.
    Outcome outcome =
        touch(service).on_exit(run, exit, now, m_actions, draw(), m_shutdown_deadline);
    after_outcome(service, outcome, now);
    settle(now);
    return true;
}

void Supervisor::on_time(Now now) {
    if (m_shutdown_deadline && now.mono >= *m_shutdown_deadline) {
        m_shutdown_deadline.reset();
        for (std::size_t i = 0; i < m_services.size(); ++i) {
            if (m_services[i]->has_process()) {  // kill_now does nothing to the others
                touch(i).kill_now(m_actions, true);
                touch(i).kill_draining_now(m_actions);
            }
        }
    }
    refresh();
    // Fired in service order, as a scan of every service would: the actions come out
    // in the same order whatever the deadlines.
    std::vector<std::size_t> due;
    for (auto it = m_deadlines.begin(); it != m_deadlines.end() && it->first <= now.mono; ++it) {
        due.push_back(it->second);
    }
    std::sort(due.begin(), due.end());
    for (std::size_t i : due) {
        const Service& s = *m_services[i];
        if (s.tick_due() && *s.tick_due() <= now.mono) {
            touch(i).on_tick(now, m_actions, next_tick_of(i, now));
        }
        touch(i).on_time(now, m_actions);
    }
    settle(now);
}

void Supervisor::on_probe_result(std::size_t service, std::uint64_t run, ProbePurpose purpose,
                                 bool ok, Now now) {
    touch(service).on_probe_result(run, purpose, ok, now, m_actions);
    settle(now);
}

void Supervisor::on_memory(std::size_t service, std::uint64_t run, std::uint64_t bytes, bool cgroup,
                           Now now) {
    touch(service).on_memory(run, bytes, cgroup, now, m_actions);
    settle(now);
}

void Supervisor::on_notify(std::size_t service, std::uint64_t run, const NotifyMessage& message,
                           Now now) {
    touch(service).on_notify(run, message, now, m_actions);
    settle(now);
}

void Supervisor::on_output(std::size_t service, std::uint64_t run, Stream stream,
                           std::string_view text, double wall) {
    touch(service).record_output(run, stream, text, wall);
    refresh();  // no settle() follows
}

void Supervisor::start_service(std::size_t service, Now now) {
    if (m_shutting_down) {
        return;
    }
    Service& s = touch(service);
    if (s.has_schedule()) {
        // An episode now, and armed for the ticks after it (SPEC §12).
        const State state = s.state();
        if (!s.schedule().armed) {
            s.arm(next_tick_of(service, now));
        }
        if (state == State::scheduled || state == State::stopped || state == State::done ||
            state == State::failed) {
            s.note_episode(now);
        }
    }
    s.want_up(now, m_actions, true);
    settle(now);
}

void Supervisor::stop_service(std::size_t service, Now now) {
    Service& s = touch(service);
    s.disarm();
    s.stop(now, m_actions, AfterStop::stay_stopped, std::nullopt);
    settle(now);
}

void Supervisor::restart_service(std::size_t service, Now now) {
    if (m_shutting_down) {
        return;
    }
    restart_one(service, now);
    settle(now);
}

void Supervisor::pause_service(std::size_t service, Now now) {
    if (m_shutting_down) {
        return;
    }
    touch(service).pause(now, m_actions);
    settle(now);
}

void Supervisor::resume_service(std::size_t service, Now now) {
    touch(service).resume(now, m_actions);
    settle(now);
}

void Supervisor::restart_one(std::size_t service, Now now) {
    Service& s = touch(service);
    if (s.state() == State::scheduled) {
        s.note_episode(now);  // between episodes, a restart runs one now, as start does
    }
    if (!s.begin_replacement(now, m_actions)) {
        s.stop(now, m_actions, AfterStop::relaunch, std::nullopt);
    }
}

void Supervisor::shutdown(Now now, int status) {
    if (m_shutting_down) {
        return;
    }
    m_shutting_down = true;
    m_exit_status = status;
    const std::size_t n = m_services.size();
    m_is_shutdown_check.assign(n, false);
    m_counted_down.assign(n, false);
    m_had_process.assign(n, false);
    m_with_process = 0;
    m_dependents_up.assign(n, 0);
    for (std::size_t i : m_order) {
        m_dependents_up[i] = m_dependents[i].size();
    }
    m_unsent = m_order.size();
    for (std::size_t i = 0; i < n; ++i) {
        touch(i).forbid_restarts();  // and every service is looked at once
        if (m_services[i]->schedule().armed) {
            touch(i).disarm();  // no tick starts an episode now
        }
    }
    if (m_daemon.shutdown_timeout > Duration::zero()) {
        m_shutdown_deadline = now.mono + m_daemon.shutdown_timeout;
    }
    // What nothing starts after stops at once; settle_shutdown() releases the rest.
    std::vector<std::size_t> ready;
    for (std::size_t i : m_order) {
        if (m_dependents_up[i] == 0) {
            ready.push_back(i);
        }
    }
    stop_for_shutdown(ready, now);
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

void Supervisor::note_crash(Now now) {
    if (!m_daemon.storm.enabled()) {
        return;
    }
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

void Supervisor::settle(Now now) {
    if (m_shutting_down) {
        settle_shutdown(now);
        refresh();
        return;
    }
    hold_for_daemon_storm(now);
    settle_reload(now);
    settle_groups(now);
    settle_rolls(now);
    if (!m_shutting_down) {  // a group may just have escalated
        launch_ready(now);
    }
    refresh();
}

// Every restart pending now or decided during the pause waits for its end. Whether a
// service has a restart to hold depends on nothing but its own state, and holding one
// twice changes nothing: so once a pause has held every service, only those touched
// since need looking at.
void Supervisor::hold_for_daemon_storm(Now now) {
    if (!m_daemon_storm_until || now.mono >= *m_daemon_storm_until) {
        m_held_until.reset();  // a pause that begins again holds every service again
        for (std::size_t i : m_hold_pending) {
            m_is_hold_pending[i] = false;
        }
        m_hold_pending.clear();
        return;
    }
    const TimePoint until = *m_daemon_storm_until;
    refresh();  // this input's touches join m_hold_pending
    std::vector<std::size_t> pending;
    pending.swap(m_hold_pending);
    for (std::size_t i : pending) {
        m_is_hold_pending[i] = false;
    }
    if (m_held_until != until) {
        m_held_until = until;
        for (std::size_t i = 0; i < m_services.size(); ++i) {
            if (m_services[i]->restart_pending()) {  // hold_until does nothing to the others
                touch(i).hold_until(until);
            }
        }
    } else {
        for (std::size_t i : pending) {
            touch(i).hold_until(until);
        }
    }
    // What was just held needs no second look.
    refresh();
    for (std::size_t i : m_hold_pending) {
        m_is_hold_pending[i] = false;
    }
    m_hold_pending.clear();
}

void Supervisor::launch_ready(Now now) {
    refresh();
    // In start order; a launch changes no other service's eligibility, so the set may
    // be read while launching (refresh() after the loop updates it).
    for (std::size_t position : m_waiting) {
        std::size_t i = m_order[position];
        const Service& s = *m_services[i];
        if (s.state() == State::waiting && s.desired_up() && !group_busy(i) &&
            dependencies_satisfied(i)) {
            touch(i).launch(now, m_actions);
        }
    }
}

// Stops each service once everything that starts after it has stopped: dependents
// first, and services with no order between them at the same time (shutdown() stops
// the first of them). Only the services touched since the last pass are looked at: a
// service that went down releases its dependencies, and those with no dependent left
// up are stopped, in waves until none is released.
void Supervisor::settle_shutdown(Now now) {
    std::vector<std::size_t> ready;
    while (!m_shutdown_check.empty()) {
        std::vector<std::size_t> check;
        check.swap(m_shutdown_check);
        for (std::size_t j : check) {
            m_is_shutdown_check[j] = false;
            const bool has = m_services[j]->has_process();
            if (has != m_had_process[j]) {
                m_had_process[j] = has;
                has ? ++m_with_process : --m_with_process;
            }
            if (m_stop_sent[j] && !has && !m_counted_down[j]) {
                m_counted_down[j] = true;
                for (std::size_t d : m_dependencies[j]) {
                    if (--m_dependents_up[d] == 0) {
                        ready.push_back(d);
                    }
                }
            }
        }
        stop_for_shutdown(ready, now);
    }
    if (m_with_process == 0 && m_unsent == 0 && !m_exit_sent) {
        m_exit_sent = true;
        m_actions.push_back(ExitAction{m_exit_status});
    }
}

void Supervisor::stop_for_shutdown(std::vector<std::size_t>& services, Now now) {
    std::sort(services.begin(), services.end(),
              [&](std::size_t a, std::size_t b) { return m_position[a] > m_position[b]; });
    for (std::size_t i : services) {
        if (!m_stop_sent[i]) {
            m_stop_sent[i] = true;
            --m_unsent;
            touch(i).stop(now, m_actions, AfterStop::shutdown, m_shutdown_deadline);
        }
    }
    services.clear();
}

std::optional<TimePoint> Supervisor::next_deadline() const {
    std::optional<TimePoint> next = m_shutdown_deadline;
    if (!m_deadlines.empty()) {
        TimePoint due = m_deadlines.begin()->first;
        next = next ? std::min(*next, due) : due;
    }
    return next;
}

std::vector<Action> Supervisor::take_actions() {
    std::vector<Action> taken;
    taken.swap(m_actions);
    return taken;
}

}  // namespace pkit::core
