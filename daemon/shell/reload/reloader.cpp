// The Reloader's reloads (SPEC §8): the tree is read and validated on a worker thread
// by BackgroundLoad; the loop only applies the result (reloader.hpp has the steps).

#include "daemon/shell/reload/reloader.hpp"

#include <exception>
#include <memory>

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

Reloader::Reloader(uv_loop_t* loop, ReloadHost& host, std::string config_dir,
                   std::shared_ptr<config::LoadCache> load_cache, std::string socket_path,
                   bool socket_from_config)
    : m_loop(loop),
      m_host(host),
      m_config_dir(std::move(config_dir)),
      m_load_cache(std::move(load_cache)),
      m_socket_path(std::move(socket_path)),
      m_socket_from_config(socket_from_config) {}

void Reloader::reload(ReloadDone done) {
    if (m_host.supervisor().shutting_down()) {
        answer({std::move(done)}, std::unexpected("pkitd is shutting down"));
        return;
    }
    if (m_loading.busy()) {
        m_reload_next.push_back(std::move(done));
        return;
    }
    start_reload({std::move(done)});
}

void Reloader::start_reload(std::vector<ReloadDone> waiting) {
    // systemd hears RELOADING=1 when a read starts and READY=1 once it is applied,
    // whatever its outcome: an invalid tree changes nothing.
    m_host.reloading(true);
    // Copies of what the worker needs: the loop's state is never shared with it. The
    // warnings are the job's, written by the worker and read on the loop once it is done.
    auto warnings = std::make_shared<std::vector<config::Diagnostic>>();
    config::LoadOptions options = config::default_load_options();
    options.load_warnings = warnings.get();
    auto started = m_loading.start(m_config_dir, options, m_load_cache,
                                   [this, waiting, warnings](config::LoadResult tree) {
                                       finish_reload(std::move(tree), waiting, *warnings);
                                   });
    if (!started) {
        std::string why = "cannot start reading the configuration: " + started.error();
        m_host.log("error", "reload: " + why);
        m_host.reloading(false);
        answer(waiting, std::unexpected(why));
    }
}

void Reloader::finish_reload(config::LoadResult tree, const std::vector<ReloadDone>& waiting,
                             const std::vector<config::Diagnostic>& warnings) {
    if (tree && m_load_cache) {
        // What the read cost: the files parsed again, the rest known unchanged.
        const config::LoadCache::Work work = m_load_cache->last_work();
        m_host.log("info", "reload: " + std::to_string(work.parsed) + " of " +
                               std::to_string(work.files) + " service files read again");
    }
    ReloadResult result;
    try {
        if (tree) {
            m_host.log_load_warnings(warnings);  // about the files, before what applying them logs
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
        m_host.log("error", "reload: " + result.error());
    }
    m_host.reloading(false);
    answer(waiting, result);
    if (m_reload_next.empty()) {
        return;
    }
    std::vector<ReloadDone> next;
    next.swap(m_reload_next);
    if (m_host.supervisor().shutting_down()) {
        answer(next, std::unexpected("pkitd is shutting down"));
    } else {
        start_reload(std::move(next));
    }
}

Reloader::ReloadResult Reloader::apply_reload(config::LoadResult tree) {
    if (m_host.supervisor().shutting_down()) {
        return std::unexpected("pkitd is shutting down");
    }
    auto refuse = [this](const std::vector<config::Diagnostic>& diagnostics) {
        std::string errors;
        for (const config::Diagnostic& d : diagnostics) {
            errors += (errors.empty() ? "" : "\n") + d.to_string();
        }
        m_host.log("error", "reload: invalid configuration, nothing changed:\n" + errors);
        return std::unexpected(errors);
    };
    if (!tree) {
        return refuse(tree.error());
    }
    if (auto errors = m_host.tree_errors(*tree); !errors.empty()) {
        return refuse(errors);
    }
    // New [[listen]] sockets are bound before anything changes: one that cannot be
    // bound fails the reload like any other configuration error.
    auto sockets = m_host.stage_sockets(*tree);
    if (!sockets) {
        return refuse(sockets.error());
    }
    if (tree->daemon.socket && *tree->daemon.socket != m_socket_path && m_socket_from_config) {
        m_host.log("warning", "reload: a changed socket is ignored until pkitd restarts");
    }
    keep_scaled_counts(*tree);
    return DaemonPort::ReloadReport{m_host.apply_tree(std::move(*tree), std::move(*sockets)), {}};
}

std::expected<void, std::string> Reloader::read_for_upgrade(BackgroundLoad::Done done) {
    return m_loading.start(m_config_dir, config::default_load_options(), m_load_cache,
                           std::move(done));
}

}  // namespace pkit::shell
