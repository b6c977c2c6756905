// The supervision tree (SPEC §6): group strategies, restart intensity, group failure,
// root restarts and escalation to pkitd's exit status.

#include <algorithm>

#include "config/values.hpp"
#include "daemon/core/supervisor.hpp"

namespace pkit::core {

// Called after a service's run completed. A crash feeds the daemon-wide storm score; a
// restart the service decided for itself is one restart event of its group; a service
// that ends in failure with `escalate` fails its group (or, at the root, pkitd).
void Supervisor::after_outcome(std::size_t service, const Outcome& outcome, Now now) {
    if (outcome.crashed) {
        note_crash(now);
    }
    if (m_shutting_down) {
        return;
    }
    const Service& s = *m_services[service];
    std::optional<std::size_t> group = m_group_of[service];
    if (outcome.restart && group) {
        member_restarted(*group, service, now);
        return;
    }
    if (outcome.ended && outcome.ended->state == State::failed && s.spec().escalate) {
        std::string why = "service " + s.name() + " failed (" + s.last_decision().why + ")";
        if (group) {
            fail_group(*group, why, now);
        } else {
            escalate(why, now);
        }
    }
}

void Supervisor::member_restarted(std::size_t index, std::size_t service, Now now) {
    Group& group = m_groups[index];
    if (group.failed) {
        return;
    }
    const config::GroupSpec& spec = group.spec;
    group.intensity.record(now.mono, spec.within);
    int events = group.intensity.count(now.mono, spec.within);
    if (spec.max_restarts >= 0 && events > spec.max_restarts) {
        std::string scope =
            spec.within > Duration::zero() ? " in " + config::format_duration(spec.within) : "";
        fail_group(index,
                   std::to_string(events) + (events == 1 ? " restart event" : " restart events") +
                       scope + (events == 1 ? " exceeds max_restarts " : " exceed max_restarts ") +
                       std::to_string(spec.max_restarts),
                   now);
        return;
    }
    auto position = std::find(group.members.begin(), group.members.end(), service);
    std::vector<std::size_t> siblings;
    switch (spec.strategy) {
        case config::Strategy::one_for_one:
            return;
        case config::Strategy::one_for_all:
            siblings = group.members;
            break;
        case config::Strategy::rest_for_one:
            siblings.assign(position, group.members.end());
            break;
    }
    std::erase(siblings, service);
    // Stopped in reverse start order; started again in start order by settle() once
    // the queue is empty, since each member waits for the one before it.
    for (auto it = siblings.rbegin(); it != siblings.rend(); ++it) {
        if (m_services[*it]->has_process() &&
            std::find(group.stop_queue.begin(), group.stop_queue.end(), *it) ==
                group.stop_queue.end()) {
            group.stop_queue.push_back(*it);
        }
    }
}

void Supervisor::fail_group(std::size_t index, const std::string& reason, Now now) {
    Group& group = m_groups[index];
    if (group.failed) {
        return;
    }
    group.failed = true;
    Event e;
    e.type = EventType::group_failed;
    e.group = group.spec.name;
    e.at = now.wall;
    e.reason = reason;
    m_actions.push_back(EmitAction{std::move(e)});

    const config::RootSpec& root = m_daemon.root;
    int used = m_root_window.count(now.mono, root.within);
    if (used >= root.max_restarts) {
        escalate("group " + group.spec.name + " failed (" + reason + "); " + std::to_string(used) +
                     " of " + std::to_string(root.max_restarts) +
                     (root.max_restarts == 1 ? " root restart used" : " root restarts used"),
                 now);
        return;
    }
    m_root_window.record(now.mono, root.within);
    // Every member stops, in reverse start order, then the group restarts whole.
    group.stop_queue.clear();
    group.front_sent = false;
    for (auto it = group.members.rbegin(); it != group.members.rend(); ++it) {
        group.stop_queue.push_back(*it);
    }
    group.then = Group::Then::root_restart;
}

void Supervisor::escalate(const std::string& reason, Now now) {
    Event e;
    e.type = EventType::escalated;
    e.at = now.wall;
    e.reason = reason;
    m_actions.push_back(EmitAction{std::move(e)});
    shutdown(now, 1);
}

bool Supervisor::group_busy(std::size_t service) const {
    return m_group_of[service] && m_groups[*m_group_of[service]].busy();
}

// Moves each group's stop queue on: the front member gets its stop, and the next one
// only once the front has no process left.
void Supervisor::settle_groups(Now now) {
    for (Group& group : m_groups) {
        while (!group.stop_queue.empty()) {
            Service& front = touch(group.stop_queue.front());
            if (!group.front_sent) {
                group.front_sent = true;
                if (group.then == Group::Then::relaunch) {
                    front.restart_by_group(now, m_actions);
                } else {
                    front.stop(now, m_actions, AfterStop::stay_stopped, std::nullopt);
                }
            }
            if (front.has_process()) {
                break;
            }
            group.stop_queue.erase(group.stop_queue.begin());
            group.front_sent = false;
        }
        if (group.stop_queue.empty() && group.then == Group::Then::root_restart) {
            group.then = Group::Then::relaunch;
            group.failed = false;
            group.intensity.reset();
            for (std::size_t member : group.members) {
                touch(member).restart_by_root(now, m_actions);
            }
        }
    }
}

}  // namespace pkit::core
