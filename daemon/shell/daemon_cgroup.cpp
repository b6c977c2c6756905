// The Daemon's cgroups (SPEC §15): the choice at start-up, each service's cgroup, a
// group-mode run's end held until its cgroup is empty, and kills that reach the whole
// cgroup.

#include <signal.h>
#include <unistd.h>

#include <cstring>

#include "daemon/shell/cgroup/cgroup_limits.hpp"
#include "daemon/shell/control/health_view.hpp"
#include "daemon/shell/daemon.hpp"
#include "daemon/shell/launch/launcher.hpp"

namespace pkit::shell {

bool Daemon::open_cgroups() {
    config::CgroupMode mode = m_supervisor.daemon_spec().cgroups;
    m_cgroup_choice = choose_cgroup(mode, mode == config::CgroupMode::off
                                              ? CgroupFacts{}
                                              : gather_cgroup_facts(m_options.proc_self));
    if (m_cgroup_choice.enabled) {
        // After an upgrade in place, the services' cgroups hold its runs: adopted.
        auto tree =
            CgroupTree::open(m_cgroup_choice.path, ::getpid(), m_options.resume.has_value());
        if (!tree) {
            m_cgroup_choice = CgroupChoice{false, "", tree.error()};
        } else {
            m_cgroup_tree = std::move(*tree);
        }
    }
    if (!m_cgroup_tree) {
        if (mode == config::CgroupMode::required) {
            log("error",
                "cgroups = \"required\", but no cgroup can be used: " + m_cgroup_choice.reason);
            return false;
        }
        if (mode == config::CgroupMode::automatic) {
            // Information, not a fault: outside a container of its own this is the rule.
            log("info",
                "cgroups: none of pkitd's own here, so services run in process groups "
                "(pause and [resources] need one; pkitd(8), CGROUPS): " +
                    m_cgroup_choice.reason);
        }
        return true;
    }
    m_run_cgroups = std::make_unique<RunCgroups>(
        m_loop, *m_cgroup_tree, [this](std::size_t service, pid_t pid, int wait_status) {
            on_cgroup_empty(service, pid, wait_status);
        });
    std::string controllers;
    for (const std::string& c : m_cgroup_tree->controllers()) {
        controllers += (controllers.empty() ? "" : " ") + c;
    }
    log("info", "cgroups: services run in " + m_cgroup_tree->root() +
                    "/NAME (controllers: " + (controllers.empty() ? "none" : controllers) + ")");
    if (!m_cgroup_tree->leftovers().empty()) {
        std::string names;
        for (const std::string& name : m_cgroup_tree->leftovers()) {
            names += (names.empty() ? "" : ", ") + name;
        }
        log("warning", "killed what a previous pkitd left in the cgroups of " + names);
    }
    return true;
}

std::expected<std::string, std::string> Daemon::run_cgroup(std::size_t service) {
    if (service >= m_limits_applied.size()) {
        m_limits_applied.resize(m_supervisor.size());
    }
    if (!m_run_cgroups) {
        apply_limits(service);
        return std::string();
    }
    auto dir = m_run_cgroups->prepare(service, m_supervisor.service(service).name());
    if (dir) {
        apply_limits(service);
    }
    return dir;
}

void Daemon::apply_limits(std::size_t service) {
    const core::Service& s = m_supervisor.service(service);
    const config::ResourceLimits& limits = *s.spec().resources;
    config::ResourceLimits& before = m_limits_applied[service];
    if (limits == before) {
        return;
    }
    LimitReport report;
    if (m_run_cgroups) {
        if (!m_run_cgroups->prepare(service, s.name())) {
            return;  // its launch says why
        }
        report = apply_limits_to(*m_cgroup_tree, s.name(), limits, before);
    } else {
        report = limits_not_applied(limits, "cgroups not used: " + m_cgroup_choice.reason);
    }
    before = limits;
    if (service >= m_limit_reports.size()) {
        m_limit_reports.resize(m_supervisor.size());
    }
    m_limit_reports[service].reset();
    if (!report.applied.empty() || !report.not_applied.empty()) {
        proto::ResourceLimitsInfo& info = m_limit_reports[service].emplace();
        info.applied = report.applied;
        for (const auto& [key, reason] : report.not_applied) {
            info.not_applied.push_back(proto::LimitNotApplied{key, reason});
        }
    }
    if (!report.not_applied.empty()) {
        log("warning", s.name() + ": [resources] not applied: " + describe_not_applied(report));
    }
}

bool Daemon::hold_exit(std::size_t service, pid_t pid, int wait_status) {
    const core::Service& s = m_supervisor.service(service);
    if (!m_run_cgroups || s.spec().stop.mode != config::StopMode::group) {
        return false;
    }
    return m_run_cgroups->hold(service, s.name(), pid, wait_status, s.spec().stop.signal,
                               now().mono + s.spec().stop.timeout);
}

void Daemon::on_cgroup_empty(std::size_t service, pid_t pid, int wait_status) {
    (void)service;
    // The run has ended now: its exit goes on as if it had just been reaped.
    ScopedFlag reaping(m_reaping);
    handle_exit(pid, wait_status, false);
    pump();
}

void Daemon::signal_action(const core::SignalAction& a) {
    // Paced (SignalPace): by the time it is sent, the run may have been reaped, its pid
    // free for another process. The index still names the same service: a removed
    // service's slot goes to another only once no paced signal waits (holds_slot).
    m_signal_pace.submit([this, a] {
        const bool held = m_run_cgroups && m_run_cgroups->holding(a.service);
        if (held || m_supervisor.service(a.service).signallable(a.run, a.pid)) {
            send_signal(a);
        }
    });
}

void Daemon::send_signal(const core::SignalAction& a) {
    if (m_run_cgroups) {
        const std::string& name = m_supervisor.service(a.service).name();
        if (m_run_cgroups->holding(a.service)) {
            // The main process is gone (and its pid may be another's): the signal is for
            // what is left, all of it in the cgroup.
            if (a.signal == SIGKILL) {
                m_run_cgroups->kill(name);
            } else {
                m_run_cgroups->signal(name, a.signal);
            }
            return;
        }
        if (a.signal == SIGKILL && a.group) {
            // The stop timeout: processes that left the group die too.
            m_run_cgroups->kill(name);
        }
    }
    if (a.then_cont) {
        stop_signal(a.pid, a.signal, a.group);
    } else {
        signal_run(a.pid, a.signal, a.group);
    }
}

void Daemon::freeze_action(const core::FreezeAction& a) {
    const std::string& name = m_supervisor.service(a.service).name();
    if (!m_cgroup_tree) {
        // pause is refused without cgroups; a thaw of a run that was never frozen (a
        // state handed over by a pkitd that had them) has nothing to undo.
        if (a.frozen) {
            log("warning", name + ": cannot pause: pkitd uses no cgroups");
        }
        return;
    }
    if (auto written = m_cgroup_tree->freeze(name, a.frozen); !written) {
        log("warning", name + ": cannot " + (a.frozen ? "freeze" : "thaw") + " " +
                           m_cgroup_tree->dir(name) + ": " + std::strerror(written.error()));
    }
}

std::vector<RunCgroupRead> Daemon::run_cgroup_reads(
    const std::vector<std::size_t>& services) const {
    std::vector<RunCgroupRead> reads;
    if (!m_run_cgroups) {
        return reads;
    }
    reads.reserve(services.size());
    for (std::size_t i : services) {
        reads.push_back(m_run_cgroups->read_of(i, m_supervisor.service(i).name()));
    }
    return reads;
}

void Daemon::read_resources(ResourcesDone done) {
    m_resources_waiting.push_back(std::move(done));
    if (m_resources_pass == nullptr) {
        start_resources_pass();
    }
}

void Daemon::start_resources_pass() {
    // Every service's run, whichever a request named: the pass over /proc costs the same,
    // and one pass answers every request waiting. With cgroups a run is its cgroup:
    // processes that left its group count, and its CPU time includes what exited
    // processes used (read_run_resources).
    std::vector<std::size_t> all(m_supervisor.size());
    for (std::size_t i = 0; i < all.size(); ++i) {
        all[i] = i;
    }
    auto reading = std::make_shared<ResourcesReading>();
    reading->names.reserve(all.size());
    for (std::size_t i : all) {
        reading->names.push_back(m_supervisor.service(i).name());
    }
    reading->groups = run_groups(m_supervisor, all);
    auto waiting = std::make_shared<std::vector<ResourcesDone>>(std::move(m_resources_waiting));
    m_resources_waiting.clear();
    auto finish = [this, reading, waiting](std::vector<proto::Resources> used,
                                           std::optional<OwnProcess>) {
        m_resources_pass = nullptr;
        reading->used = std::move(used);
        for (const ResourcesDone& done : *waiting) {
            try {
                done(*reading);
            } catch (...) {
                // One failing reply must not keep the others from theirs.
            }
        }
        if (!m_resources_waiting.empty()) {
            start_resources_pass();  // those who asked while this pass ran
        }
    };
    std::vector<RunCgroupRead> cgroups = run_cgroup_reads(all);
    m_resources_pass = ResourcesPass::start(m_loop, reading->groups, cgroups, false, finish);
    if (m_resources_pass == nullptr) {
        // No pool to read on: read here, as the loop has to.
        finish(read_run_resources(reading->groups, cgroups), std::nullopt);
    }
}

bool Daemon::run_oom_killed(std::size_t service) const {
    return m_run_cgroups &&
           m_run_cgroups->oom_killed_since_start(service, m_supervisor.service(service).name());
}

std::optional<proto::ResourceLimitsInfo> Daemon::resource_limits(std::size_t service) const {
    return service < m_limit_reports.size() ? m_limit_reports[service] : std::nullopt;
}

void Daemon::close_cgroups() {
    m_run_cgroups.reset();
    if (m_cgroup_tree) {
        m_cgroup_tree->remove_all();
    }
}

}  // namespace pkit::shell
