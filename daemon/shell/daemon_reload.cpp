// Daemon::reload() (SPEC §8): the tree is read and validated on a worker thread by
// BackgroundLoad; the loop only applies the result.
//
//   reload(done) ──idle──▶ start_reload ──uv_queue_work──▶ load_tree (worker thread)
//                └─busy──▶ m_reload_next                          │
//   finish_reload ◀──after-work, on the loop──────────────────────┘
//     apply_reload: log, resolve launches, Supervisor::reload, access, pump
//     each waiting `done`; then one read for m_reload_next, if any

#include <exception>
#include <memory>

#include "daemon/shell/cgroup/cgroup_limits.hpp"
#include "daemon/shell/control/request_handler.hpp"
#include "daemon/shell/daemon.hpp"
#include "daemon/shell/http/endpoint.hpp"

namespace pkit::shell {

namespace {

// Calls every `done`; a throwing one must not keep the others from their answer.
void answer(const std::vector<DaemonPort::ReloadDone>& waiting,
            const DaemonPort::ReloadResult& result) {
    for (const DaemonPort::ReloadDone& done : waiting) {
        try {
            done(result);
        } catch (const std::exception&) {
            // The reply is lost; pkitd carries on.
        }
    }
}

}  // namespace

void Daemon::reload(ReloadDone done) {
    if (m_supervisor.shutting_down()) {
        answer({std::move(done)}, std::unexpected("pkitd is shutting down"));
        return;
    }
    if (m_loading.busy()) {
        m_reload_next.push_back(std::move(done));
        return;
    }
    start_reload({std::move(done)});
}

void Daemon::start_reload(std::vector<ReloadDone> waiting) {
    // systemd hears RELOADING=1 when a read starts and READY=1 once it is applied,
    // whatever its outcome: an invalid tree changes nothing.
    m_systemd.reloading();
    // Copies of what the worker needs: the loop's state is never shared with it. The
    // warnings are the job's, written by the worker and read on the loop once it is done.
    auto warnings = std::make_shared<std::vector<config::Diagnostic>>();
    config::LoadOptions options = config::default_load_options();
    options.load_warnings = warnings.get();
    auto started = m_loading.start(m_options.config_dir, options, m_options.load_cache,
                                   [this, waiting, warnings](config::LoadResult tree) {
                                       finish_reload(std::move(tree), waiting, *warnings);
                                   });
    if (!started) {
        std::string why = "cannot start reading the configuration: " + started.error();
        log("error", "reload: " + why);
        m_systemd.reloaded();
        answer(waiting, std::unexpected(why));
    }
}

void Daemon::finish_reload(config::LoadResult tree, const std::vector<ReloadDone>& waiting,
                           const std::vector<config::Diagnostic>& warnings) {
    if (tree && m_options.load_cache) {
        // What the read cost: the files parsed again, the rest known unchanged.
        const config::LoadCache::Work work = m_options.load_cache->last_work();
        log("info", "reload: " + std::to_string(work.parsed) + " of " + std::to_string(work.files) +
                        " service files read again");
    }
    ReloadResult result;
    try {
        if (tree) {
            log_load_warnings(warnings);  // about the files, before what applying them logs
        }
        result = apply_reload(std::move(tree));
        if (result) {
            for (const config::Diagnostic& warning : warnings) {
                result->warnings.push_back(warning.to_string());
            }
        }
    } catch (const std::exception& e) {
        // Only resource exhaustion; the reply says so rather than leaving it unanswered.
        result = std::unexpected(std::string("reload failed: ") + e.what());
        log("error", "reload: " + result.error());
    }
    m_systemd.reloaded();
    answer(waiting, result);
    if (m_reload_next.empty()) {
        return;
    }
    std::vector<ReloadDone> next;
    next.swap(m_reload_next);
    if (m_supervisor.shutting_down()) {
        answer(next, std::unexpected("pkitd is shutting down"));
    } else {
        start_reload(std::move(next));
    }
}

Daemon::ReloadResult Daemon::apply_reload(config::LoadResult tree) {
    if (m_supervisor.shutting_down()) {
        return std::unexpected("pkitd is shutting down");
    }
    auto refuse = [this](const std::vector<config::Diagnostic>& diagnostics) {
        std::string errors;
        for (const config::Diagnostic& d : diagnostics) {
            errors += (errors.empty() ? "" : "\n") + d.to_string();
        }
        log("error", "reload: invalid configuration, nothing changed:\n" + errors);
        return std::unexpected(errors);
    };
    if (!tree) {
        return refuse(tree.error());
    }
    if (m_cgroup_tree) {
        if (auto errors =
                required_limit_errors(*tree, m_cgroup_choice, m_cgroup_tree->controllers());
            !errors.empty()) {
            return refuse(errors);
        }
    }
    // New [[listen]] sockets are bound before anything changes: one that cannot be
    // bound fails the reload like any other configuration error.
    std::vector<const config::ServiceSpec*> specs;
    for (const config::ServiceSpec& spec : tree->services) {
        specs.push_back(&spec);
    }
    auto sockets = m_listen.stage(specs);
    if (!sockets) {
        return refuse(sockets.error());
    }
    if (tree->daemon.socket && *tree->daemon.socket != m_options.socket_path &&
        m_options.socket_from_config) {
        log("warning", "reload: a changed socket is ignored until pkitd restarts");
    }
    keep_scaled_counts(*tree);
    return ReloadReport{apply_tree(std::move(*tree), std::move(*sockets)), {}};
}

void Daemon::log_load_warnings(const std::vector<config::Diagnostic>& warnings) {
    for (const config::Diagnostic& warning : warnings) {
        if (m_options.log_format == LogFormat::json) {
            log("warning", warning.to_string());
        } else {
            m_stderr.write_line(warning.to_string());
        }
    }
}

core::ReloadOutcome Daemon::apply_tree(config::Tree tree,
                                       std::optional<ListenSockets::Staged> sockets) {
    // A replaced or removed service may be launching: the core can stop only a run
    // whose pid it knows.
    resolve_launches();
    const std::size_t slots = m_supervisor.size();
    std::vector<bool> held(slots);
    for (std::size_t service = 0; service < slots; ++service) {
        held[service] = holds_slot(service);
    }
    core::ReloadOutcome outcome = m_supervisor.reload_from(tree, now(), held);
    BackgroundLoad::discard(m_loop, std::move(tree));
    if (sockets) {
        m_listen.commit(std::move(*sockets));
    }
    if (m_control) {
        m_control->apply_access();
    }
    if (m_http) {
        m_http->apply(m_supervisor.daemon_spec().http);
    }
    // Added services got new slots, or slots of removed services that nothing held any
    // more: the shell's per-service state grows with the first and is reset for the
    // others (what they held, pipes and notify sockets, is gone already).
    m_notify.resize(m_supervisor.size());
    m_pipes.resize(m_supervisor.size());
    m_memory->refresh();  // memory_max's intervals
    for (const std::string& name : outcome.added) {
        auto service = m_supervisor.find(name);
        if (!service || *service >= slots) {
            continue;
        }
        if (*service < m_limits_applied.size()) {
            m_limits_applied[*service] = {};
        }
        if (*service < m_limit_reports.size()) {
            m_limit_reports[*service].reset();
        }
        if (m_run_cgroups) {
            m_run_cgroups->forget(*service);
        }
    }
    // Changed [resources] go to the cgroups of the services that have one now.
    for (std::size_t service = 0; service < m_limits_applied.size(); ++service) {
        apply_limits(service);
    }
    pump();
    return outcome;
}

bool Daemon::holds_slot(std::size_t service) const {
    return (service < m_pipes.size() && !m_pipes[service].empty()) ||
           (service < m_notify.size() && m_notify[service] != nullptr) ||
           (m_run_cgroups && m_run_cgroups->holding(service)) || m_signal_pace.waiting() > 0 ||
           (m_control && m_control->refers_to(service));
}

}  // namespace pkit::shell
