// The Cgroups owner (cgroups.hpp, SPEC §15): the choice at start-up, each service's
// cgroup and [resources], a group-mode run's end held until its cgroup is empty, and
// signals that reach the whole cgroup.

#include "daemon/shell/cgroup/cgroups.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstring>

#include "daemon/shell/cgroup/cgroup_limits.hpp"
#include "daemon/shell/launch/launcher.hpp"
#include "daemon/shell/views/health_view.hpp"

namespace pkit::shell {

Cgroups::Signaller Cgroups::process_signaller() {
    return [](pid_t pid, int signo, bool group, bool then_cont) {
        if (then_cont) {
            stop_signal(pid, signo, group);
        } else {
            signal_run(pid, signo, group);
        }
    };
}

Cgroups::Cgroups(uv_loop_t* loop, const core::Supervisor& supervisor, Log log, Clock clock,
                 Emptied emptied, Signaller signaller)
    : m_loop(loop),
      m_supervisor(supervisor),
      m_log(std::move(log)),
      m_clock(std::move(clock)),
      m_emptied(std::move(emptied)),
      m_signaller(std::move(signaller)) {}

Cgroups::~Cgroups() {
    if (m_resources_pass != nullptr) {
        m_resources_pass->abandon();  // nobody is left to answer
    }
}

bool Cgroups::open(const std::string& proc_self, bool resumed) {
    config::CgroupMode mode = m_supervisor.daemon_spec().cgroups;
    m_choice = choose_cgroup(
        mode, mode == config::CgroupMode::off ? CgroupFacts{} : gather_cgroup_facts(proc_self));
    std::unique_ptr<CgroupTree> opened;
    if (m_choice.enabled) {
        // After an upgrade in place, the services' cgroups hold its runs: adopted.
        auto tree = CgroupTree::open(m_choice.path, ::getpid(), resumed);
        if (!tree) {
            m_choice = CgroupChoice{false, "", tree.error()};
        } else {
            opened = std::move(*tree);
        }
    }
    if (!opened) {
        if (mode == config::CgroupMode::required) {
            m_log("error", "cgroups = \"required\", but no cgroup can be used: " + m_choice.reason);
            return false;
        }
        if (mode == config::CgroupMode::automatic) {
            // Information, not a fault: outside a container of its own this is the rule.
            m_log("info",
                  "cgroups: none of pkitd's own here, so services run in process groups "
                  "(pause and [resources] need one; pkitd(8), CGROUPS): " +
                      m_choice.reason);
        }
        return true;
    }
    started_with(std::move(opened));
    std::string controllers;
    for (const std::string& c : m_tree->controllers()) {
        controllers += (controllers.empty() ? "" : " ") + c;
    }
    m_log("info", "cgroups: services run in " + m_tree->root() +
                      "/NAME (controllers: " + (controllers.empty() ? "none" : controllers) + ")");
    if (!m_tree->leftovers().empty()) {
        std::string names;
        for (const std::string& name : m_tree->leftovers()) {
            names += (names.empty() ? "" : ", ") + name;
        }
        m_log("warning", "killed what a previous pkitd left in the cgroups of " + names);
    }
    return true;
}

void Cgroups::open_at(std::unique_ptr<CgroupTree> tree) {
    m_choice = CgroupChoice{true, tree->root(), ""};
    started_with(std::move(tree));
}

void Cgroups::started_with(std::unique_ptr<CgroupTree> tree) {
    m_tree = std::move(tree);
    m_runs = std::make_unique<RunCgroups>(
        m_loop, *m_tree,
        [this](std::size_t, pid_t pid, int wait_status) { m_emptied(pid, wait_status); });
}

void Cgroups::close() {
    m_runs.reset();
    if (m_tree) {
        m_tree->remove_all();
    }
}

proto::CgroupsInfo Cgroups::info() const {
    proto::CgroupsInfo info;
    info.enabled = m_tree != nullptr;
    if (m_tree) {
        info.path = m_tree->root();
        info.controllers = m_tree->controllers();
    } else {
        info.reason = m_choice.reason;
    }
    return info;
}

std::expected<std::string, std::string> Cgroups::run_cgroup(std::size_t service) {
    if (service >= m_limits_applied.size()) {
        m_limits_applied.resize(m_supervisor.size());
    }
    if (!m_runs) {
        apply_limits(service);
        return std::string();
    }
    auto dir = m_runs->prepare(service, m_supervisor.service(service).name());
    if (dir) {
        apply_limits(service);
    }
    return dir;
}

bool Cgroups::clone_into(std::size_t service) const {
    return !m_tree || !m_tree->was_killed(m_supervisor.service(service).name());
}

void Cgroups::run_started(std::size_t service) {
    if (m_runs) {
        m_runs->run_started(service, m_supervisor.service(service).name());
    }
}

void Cgroups::apply_limits(std::size_t service) {
    const core::Service& s = m_supervisor.service(service);
    const config::ResourceLimits& limits = *s.spec().resources;
    config::ResourceLimits& before = m_limits_applied[service];
    if (limits == before) {
        return;
    }
    LimitReport report;
    if (m_runs) {
        if (!m_runs->prepare(service, s.name())) {
            return;  // its launch says why
        }
        report = apply_limits_to(*m_tree, s.name(), limits, before);
    } else {
        report = limits_not_applied(limits, "cgroups not used: " + m_choice.reason);
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
        m_log("warning", s.name() + ": [resources] not applied: " + describe_not_applied(report));
    }
}

void Cgroups::apply_all_limits() {
    for (std::size_t service = 0; service < m_limits_applied.size(); ++service) {
        apply_limits(service);
    }
}

std::optional<proto::ResourceLimitsInfo> Cgroups::limits_report(std::size_t service) const {
    return service < m_limit_reports.size() ? m_limit_reports[service] : std::nullopt;
}

bool Cgroups::on_child_exit(ChildExit& exit) {
    if (!exit.service) {
        return false;
    }
    const std::size_t service = *exit.service;
    const core::Service& s = m_supervisor.service(service);
    if (exit.may_hold && m_runs && s.spec().stop.mode == config::StopMode::group &&
        m_runs->hold(service, s.name(), exit.pid, exit.wait_status, s.spec().stop.signal,
                     m_clock().mono + s.spec().stop.timeout)) {
        return true;  // its cgroup is not empty yet: Emptied goes on
    }
    // The run's end: memory.events read again (not for a run a start_first restart
    // replaced, which shares the cgroup with its successor).
    exit.exit.oom_killed =
        s.pid() == exit.pid && m_runs && m_runs->oom_killed_since_start(service, s.name());
    return false;
}

bool Cgroups::holding(std::size_t service) const {
    return m_runs && m_runs->holding(service);
}

void Cgroups::send(const core::SignalAction& a) {
    if (m_runs) {
        const std::string& name = m_supervisor.service(a.service).name();
        if (m_runs->holding(a.service)) {
            // The main process is gone (and its pid may be another's): the signal is for
            // what is left, all of it in the cgroup.
            if (a.signal == SIGKILL) {
                m_runs->kill(name);
            } else {
                m_runs->signal(name, a.signal);
            }
            return;
        }
        if (a.signal == SIGKILL && a.group) {
            // The stop timeout: processes that left the group die too.
            m_runs->kill(name);
        }
    }
    m_signaller(a.pid, a.signal, a.group, a.then_cont);
}

void Cgroups::signal_client(std::size_t service, pid_t pid, int signo, bool group) {
    if (holding(service)) {
        const std::string& name = m_supervisor.service(service).name();
        if (signo == SIGKILL) {
            m_runs->kill(name);
        } else {
            m_runs->signal(name, signo);
        }
        return;
    }
    m_signaller(pid, signo, group, false);
}

void Cgroups::freeze(const core::FreezeAction& a) {
    const std::string& name = m_supervisor.service(a.service).name();
    if (!m_tree) {
        // pause is refused without cgroups; a thaw of a run that was never frozen (a
        // state handed over by a pkitd that had them) has nothing to undo.
        if (a.frozen) {
            m_log("warning", name + ": cannot pause: pkitd uses no cgroups");
        }
        return;
    }
    if (auto written = m_tree->freeze(name, a.frozen); !written) {
        m_log("warning", name + ": cannot " + (a.frozen ? "freeze" : "thaw") + " " +
                             m_tree->dir(name) + ": " + std::strerror(written.error()));
    }
}

void Cgroups::kill(std::size_t service) {
    if (m_runs) {
        m_runs->kill(m_supervisor.service(service).name());
    }
}

void Cgroups::kill_held() {
    if (m_runs) {
        m_runs->kill_held();
    }
}

std::vector<RunCgroupRead> Cgroups::reads(const std::vector<std::size_t>& services) const {
    std::vector<RunCgroupRead> reads;
    if (!m_runs) {
        return reads;
    }
    reads.reserve(services.size());
    for (std::size_t i : services) {
        reads.push_back(m_runs->read_of(i, m_supervisor.service(i).name()));
    }
    return reads;
}

void Cgroups::read_resources(DaemonPort::ResourcesDone done) {
    m_resources_waiting.push_back(std::move(done));
    if (m_resources_pass == nullptr) {
        start_resources_pass();
    }
}

void Cgroups::start_resources_pass() {
    // Every service's run, whichever a request named: the pass over /proc costs the same,
    // and one pass answers every request waiting. With cgroups a run is its cgroup:
    // processes that left its group count, and its CPU time includes what exited
    // processes used (read_run_resources).
    std::vector<std::size_t> all(m_supervisor.size());
    for (std::size_t i = 0; i < all.size(); ++i) {
        all[i] = i;
    }
    auto reading = std::make_shared<DaemonPort::ResourcesReading>();
    reading->names.reserve(all.size());
    for (std::size_t i : all) {
        reading->names.push_back(m_supervisor.service(i).name());
    }
    reading->groups = run_groups(m_supervisor, all);
    auto waiting =
        std::make_shared<std::vector<DaemonPort::ResourcesDone>>(std::move(m_resources_waiting));
    m_resources_waiting.clear();
    auto finish = [this, reading, waiting](std::vector<proto::Resources> used,
                                           std::optional<OwnProcess>) {
        m_resources_pass = nullptr;
        reading->used = std::move(used);
        for (const DaemonPort::ResourcesDone& done : *waiting) {
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
    std::vector<RunCgroupRead> cgroups = reads(all);
    m_resources_pass = ResourcesPass::start(m_loop, reading->groups, cgroups, false, finish);
    if (m_resources_pass == nullptr) {
        // No pool to read on: read here, as the loop has to.
        finish(read_run_resources(reading->groups, cgroups), std::nullopt);
    }
}

std::vector<config::Diagnostic> Cgroups::reload_errors(const config::Tree& tree) const {
    if (!m_tree) {
        return {};
    }
    return required_limit_errors(tree, m_choice, m_tree->controllers());
}

void Cgroups::slot_reused(std::size_t service) {
    if (service < m_limits_applied.size()) {
        m_limits_applied[service] = {};
    }
    if (service < m_limit_reports.size()) {
        m_limit_reports[service].reset();
    }
    if (m_runs) {
        m_runs->forget(service);
    }
}

std::optional<std::string> Cgroups::busy() const {
    // A group-mode run whose main process exited waits for its cgroup to empty; that
    // wait (at most its stop timeout) is not in the state.
    if (auto held = m_runs ? m_runs->any_held() : std::nullopt) {
        return "the run of " + *held + " is ending (its cgroup is not empty yet)";
    }
    return std::nullopt;
}

std::optional<core::TimePoint> Cgroups::next_deadline() const {
    return m_runs ? m_runs->next_deadline() : std::nullopt;
}

void Cgroups::on_time(core::TimePoint now) {
    if (m_runs) {
        m_runs->on_time(now);
    }
}

void Cgroups::hand_over(upgrade::DaemonFacts& facts) const {
    for (std::size_t i = 0; m_runs && i < m_supervisor.size(); ++i) {
        if (!m_supervisor.retired(i) && m_supervisor.service(i).has_process()) {
            auto [usage, oom] = m_runs->run_bases(i);
            facts.cgroup_runs.push_back({m_supervisor.service(i).name(), usage, oom});
        }
    }
}

void Cgroups::resume(const upgrade::DaemonFacts& facts) {
    for (const upgrade::CgroupRunFact& run : facts.cgroup_runs) {
        // The adopted runs are measured from their own start (cpu.stat, memory.events).
        if (auto service = m_supervisor.find(run.service); service && m_runs) {
            m_runs->restore_run_bases(*service, run.usage_usec, run.oom_kill);
        }
    }
}

}  // namespace pkit::shell
