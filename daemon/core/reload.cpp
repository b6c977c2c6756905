// Reload (SPEC §8): the new tree is compared with the running one, definition by
// definition. Replacements and removals wait for the old run to end (settle_reload).

#include <algorithm>
#include <string_view>
#include <unordered_map>
#include <variant>

#include "daemon/core/supervisor.hpp"

namespace pkit::core {

namespace {

// Each member's group, so that comparing a reload's every service stays linear.
std::unordered_map<std::string_view, const config::GroupSpec*> groups_by_member(
    const config::DaemonSpec& daemon) {
    std::unordered_map<std::string_view, const config::GroupSpec*> of;
    for (const config::GroupSpec& group : daemon.groups) {
        for (const std::string& member : group.members) {
            of.emplace(member, &group);  // the first group, as a search would find
        }
    }
    return of;
}

// A service's group: listed by its name, or an instance listed by its file's name. The
// group's spec names the file, not its instances, so a reload or `scale` that changes
// how many instances the file has changes neither the group nor its other members.
const config::GroupSpec* group_containing(
    const std::unordered_map<std::string_view, const config::GroupSpec*>& of,
    const std::string& service) {
    auto it = of.find(service);
    if (it == of.end()) {
        std::string_view name = service;
        if (std::size_t at = name.find('@'); at != std::string_view::npos) {
            it = of.find(name.substr(0, at));
        }
    }
    return it == of.end() ? nullptr : it->second;
}

// Both scheduled, and nothing but the schedule differs: the job is re-armed and a
// running episode goes on (SPEC §12).
bool only_schedule_differs(const config::ServiceSpec& old_spec, const config::ServiceSpec& spec) {
    if (!old_spec.schedule->enabled() || !spec.schedule->enabled()) {
        return false;
    }
    config::ServiceSpec same = old_spec;
    same.schedule = spec.schedule;
    return same == spec;
}

// Nothing but the log file keys differ (SPEC §18): the run goes on, and pkitd's file
// switches between two of its lines.
bool only_log_file_differs(const config::ServiceSpec& old_spec, const config::ServiceSpec& spec) {
    config::ServiceSpec same = old_spec;
    same.output.log = spec.output.log;
    return same == spec;
}

bool same_group(const config::GroupSpec* a, const config::GroupSpec* b) {
    if (a == nullptr || b == nullptr) {
        return a == b;
    }
    return *a == *b;
}

// The service an action names, if it names one. (std::get_if, not std::visit: a visit
// may throw bad_variant_access, and the core does not throw.)
template <std::size_t I = 0>
std::optional<std::size_t> service_named(const Action& action) {
    if constexpr (I < std::variant_size_v<Action>) {
        if (const auto* a = std::get_if<I>(&action)) {
            if constexpr (requires { a->service + 0; }) {
                return a->service;
            } else {
                return std::nullopt;
            }
        }
        return service_named<I + 1>(action);
    } else {
        return std::nullopt;
    }
}

}  // namespace

std::vector<std::size_t> Supervisor::reusable_slots(const std::vector<bool>& caller_holds) const {
    const std::size_t n = m_services.size();
    std::vector<bool> named(n, false);  // by something of the core's that outlives a turn
    for (const PendingReload& pending : m_reloads) {
        named[pending.service] = true;
    }
    for (const Roll& roll : m_rolls) {
        if (!roll.done) {
            for (std::size_t i : roll.services) {
                named[i] = true;
            }
        }
    }
    for (const Group& group : m_groups) {
        for (std::size_t i : group.stop_queue) {
            named[i] = true;
        }
    }
    for (const Action& action : m_actions) {
        if (const auto service = service_named(action)) {
            named[*service] = true;
        }
    }
    std::vector<std::size_t> free;
    for (std::size_t i = n; i-- > 0;) {
        const Service& s = *m_services[i];
        if (m_retired[i] && !named[i] && !s.has_process() && !s.launch_in_flight() &&
            (i >= caller_holds.size() || !caller_holds[i])) {
            free.push_back(i);
        }
    }
    return free;
}

ReloadOutcome Supervisor::reload_from(config::Tree& tree, Now now,
                                      const std::vector<bool>& caller_holds) {
    ReloadOutcome outcome;
    config::DaemonSpec old_daemon = std::move(m_daemon);
    m_daemon = std::move(tree.daemon);
    auto old_groups = groups_by_member(old_daemon);
    auto new_groups = groups_by_member(m_daemon);
    std::vector<bool> kept(m_services.size(), false);  // live slots the new tree names
    // A reload still pending for a service replaced or removed again is superseded;
    // they are dropped in one pass at the end, not searched for one by one.
    std::vector<bool> superseded(m_services.size(), false);
    const std::size_t pending_before = m_reloads.size();
    // A definition waiting for its service's old run to end is what the service will
    // run: the new tree is compared with it, not with the running one.
    std::vector<const config::ServiceSpec*> waiting(m_services.size(), nullptr);
    for (const PendingReload& pending : m_reloads) {
        if (pending.replacement) {
            waiting[pending.service] = &*pending.replacement;
        }
    }
    std::vector<std::size_t> added;
    // Retired slots for the services added, looked for at the first one added.
    std::optional<std::vector<std::size_t>> free_slots;
    std::vector<bool> reused(m_services.size(), false);
    // Whether the graph (names, `after` edges, groups) may differ: else build_graph(),
    // linear in every service, is left out.
    bool edges_changed = old_daemon.groups != m_daemon.groups;
    // Both in name order, mostly: the slot after the last one found is tried before
    // the index, which then is seldom needed. Only the slots there were before: a name
    // twice in `tree` must not find the slot its first mention added.
    std::size_t next_slot = 0;
    for (config::ServiceSpec& spec : tree.services) {
        std::optional<std::size_t> existing;
        if (next_slot < kept.size() && !m_retired[next_slot] && !reused[next_slot] &&
            m_services[next_slot]->name() == spec.name) {
            existing = next_slot;
        } else {
            existing = find(spec.name);
        }
        next_slot = existing ? *existing + 1 : next_slot;
        if (existing) {
            kept[*existing] = true;
        } else {
            if (!free_slots) {
                free_slots = reusable_slots(caller_holds);
            }
            outcome.added.push_back(spec.name);
            if (free_slots->empty()) {
                std::size_t i = m_services.size();
                m_services.push_back(std::make_unique<Service>(std::move(spec), i, std::nullopt));
                m_retired.push_back(false);
                added.push_back(i);
                continue;
            }
            // A slot given away: it is live again, neither kept nor removed by the pass
            // below, and build_graph() and reindex() read it afresh.
            std::size_t i = free_slots->back();
            free_slots->pop_back();
            m_services[i] = std::make_unique<Service>(std::move(spec), i, std::nullopt);
            m_retired[i] = false;
            kept[i] = true;
            reused[i] = true;
            if (i < m_stop_sent.size()) {
                m_stop_sent[i] = false;
            }
            added.push_back(i);
            continue;
        }
        Service& s = *m_services[*existing];
        bool group_changed = !same_group(group_containing(old_groups, spec.name),
                                         group_containing(new_groups, spec.name));
        // The same parse of the file needs no look; another that holds the same values
        // is its parse from now on.
        const config::ServiceSpec* next = waiting[*existing];
        const config::ServiceSpec& current = next != nullptr ? *next : s.spec();
        bool same = current.stamp.same_parse(spec.stamp);
        if (!same && current == spec) {
            if (next == nullptr) {
                s.restamp(spec.stamp);
            }
            same = true;
        }
        if (same && !group_changed) {
            ++outcome.unchanged;
            continue;
        }
        outcome.changed.push_back(spec.name);
        edges_changed = edges_changed || s.spec().after != spec.after;
        if (!group_changed && next == nullptr && only_schedule_differs(s.spec(), spec)) {
            Service& job = touch(*existing);
            job.replace_schedule(*spec.schedule);
            job.restamp(spec.stamp);  // nothing else differed
            if (job.schedule().armed) {
                job.disarm();
                job.arm(next_tick_of(*existing, now));
            }
            continue;
        }
        if (!group_changed && next == nullptr && only_log_file_differs(s.spec(), spec)) {
            Service& same = touch(*existing);
            same.replace_log_file(spec.output.log);
            same.restamp(spec.stamp);  // nothing else differed
            continue;
        }
        bool start = spec.autostart;
        if (start && !group_changed && touch(*existing).begin_replacement(now, m_actions, &spec)) {
            superseded[*existing] = true;  // replaced now: an older pending reload is moot
            outcome.replacements.push_back(
                ReloadReplacement{*existing, m_services[*existing]->replacement()->old_run});
            continue;
        }
        superseded[*existing] = true;
        m_reloads.push_back(PendingReload{*existing, std::move(spec), start});
        touch(*existing).stop(now, m_actions, AfterStop::stay_stopped, std::nullopt);
    }
    for (std::size_t i = 0; i < kept.size(); ++i) {
        if (m_retired[i] || kept[i]) {
            continue;
        }
        outcome.removed.push_back(m_services[i]->name());
        m_retired[i] = true;
        superseded[i] = true;
        m_reloads.push_back(PendingReload{i, std::nullopt, false});
        touch(i).stop(now, m_actions, AfterStop::stay_stopped, std::nullopt);
    }
    auto old_end = m_reloads.begin() + static_cast<std::ptrdiff_t>(pending_before);
    m_reloads.erase(std::remove_if(m_reloads.begin(), old_end,
                                   [&](const PendingReload& p) { return superseded[p.service]; }),
                    old_end);
    if (edges_changed || !added.empty() || !outcome.removed.empty()) {
        build_graph();
    }
    for (std::size_t i : added) {
        if (m_services[i]->spec().autostart) {
            bring_up(i, now);
        }
    }
    Event e;
    e.type = EventType::reload;
    e.at = now.wall;
    e.reason = std::to_string(outcome.added.size()) + " added, " +
               std::to_string(outcome.removed.size()) + " removed, " +
               std::to_string(outcome.changed.size()) + " changed, " +
               std::to_string(outcome.unchanged) + " unchanged";
    m_actions.push_back(EmitAction{std::move(e)});
    settle(now);
    return outcome;
}

ReloadPreview Supervisor::preview_reload(const config::Tree& tree) const {
    ReloadPreview preview;
    auto old_groups = groups_by_member(m_daemon);
    auto new_groups = groups_by_member(tree.daemon);
    std::vector<const config::ServiceSpec*> waiting(m_services.size(), nullptr);
    for (const PendingReload& pending : m_reloads) {
        if (pending.replacement) {
            waiting[pending.service] = &*pending.replacement;
        }
    }
    std::vector<bool> kept(m_services.size(), false);
    for (const config::ServiceSpec& spec : tree.services) {
        std::optional<std::size_t> existing = find(spec.name);
        if (!existing) {
            preview.added.push_back(spec.name);
            continue;
        }
        kept[*existing] = true;
        const Service& s = *m_services[*existing];
        const config::GroupSpec* old_group = group_containing(old_groups, spec.name);
        const config::GroupSpec* new_group = group_containing(new_groups, spec.name);
        const bool group_changed = !same_group(old_group, new_group);
        const config::ServiceSpec* next = waiting[*existing];
        const config::ServiceSpec& current = next != nullptr ? *next : s.spec();
        if ((current.stamp.same_parse(spec.stamp) || current == spec) && !group_changed) {
            ++preview.unchanged;
            continue;
        }
        // The decisions of reload_from(), in its order.
        ChangedService changed{spec.name, ReloadEffect::restart, config::spec_diff(current, spec)};
        for (config::KeyChange& key : config::group_diff(old_group, new_group)) {
            changed.keys.push_back(std::move(key));
        }
        if (!group_changed && next == nullptr && only_schedule_differs(s.spec(), spec)) {
            changed.effect = ReloadEffect::rearm;
        } else if (!group_changed && next == nullptr && only_log_file_differs(s.spec(), spec)) {
            changed.effect = ReloadEffect::replace;  // in place: the run goes on
        } else if (spec.autostart && !group_changed && s.can_replace(&spec)) {
            changed.effect = ReloadEffect::start_first;
        } else if (s.has_process() || s.launch_in_flight()) {
            changed.effect = spec.autostart ? ReloadEffect::restart : ReloadEffect::stop;
        } else if (!spec.autostart) {
            changed.effect = ReloadEffect::replace;
        } else {
            changed.effect = spec.schedule->enabled() ? ReloadEffect::rearm : ReloadEffect::start;
        }
        preview.changed.push_back(std::move(changed));
    }
    for (std::size_t i = 0; i < kept.size(); ++i) {
        if (!m_retired[i] && !kept[i]) {
            preview.removed.push_back(m_services[i]->name());
        }
    }
    return preview;
}

std::string_view to_string(ReloadEffect effect) {
    switch (effect) {
        case ReloadEffect::restart:
            return "restart";
        case ReloadEffect::start_first:
            return "start_first";
        case ReloadEffect::start:
            return "start";
        case ReloadEffect::stop:
            return "stop";
        case ReloadEffect::rearm:
            return "rearm";
        case ReloadEffect::replace:
            return "replace";
    }
    return "?";
}

void Supervisor::settle_reload(Now now) {
    bool rebuild = false;
    std::erase_if(m_reloads, [&](PendingReload& pending) {
        if (m_services[pending.service]->has_process()) {
            return false;
        }
        if (pending.replacement) {
            Service& s = touch(pending.service);
            // The graph follows `after`; nothing else of a replaced spec changes it.
            rebuild = rebuild || s.spec().after != pending.replacement->after;
            s.replace_spec(std::move(*pending.replacement), s.group());
            s.disarm();
            if (pending.start) {
                bring_up(pending.service, now);
            }
        }
        return true;
    });
    if (rebuild) {
        build_graph();
    }
}

}  // namespace pkit::core
