// Reloader::preview() (SPEC §21, `reload --dry-run`): the tree is read on a worker
// thread as a reload reads it, then compared with what runs by the Supervisor's
// preview_reload(), on the loop, and dropped. Nothing a later reload depends on moves:
// the read goes without the reload cache (whose parses and inotify events are the next
// reload's), no [[listen]] socket is bound, no `scale` count is forgotten.
//
//   preview(done) ──idle──▶ start_preview ──uv_queue_work──▶ load_tree (worker)
//                 └─busy──▶ m_preview_next                        │
//   preview_tree, each waiting `done` ◀──after-work, on the loop─────────┘

#include <exception>
#include <memory>

#include "config/instances.hpp"
#include "daemon/shell/reload/reloader.hpp"

namespace pkit::shell {

namespace {

void answer(const std::vector<DaemonPort::PreviewDone>& waiting,
            const DaemonPort::PreviewResult& result) {
    for (const DaemonPort::PreviewDone& done : waiting) {
        try {
            done(result);
        } catch (const std::exception&) {
            // The reply is lost; pkitd carries on.
        }
    }
}

}  // namespace

void Reloader::preview(PreviewDone done) {
    if (m_host.supervisor().shutting_down()) {
        answer({std::move(done)}, std::unexpected("pkitd is shutting down"));
        return;
    }
    if (m_previewing.busy()) {
        m_preview_next.push_back(std::move(done));
        return;
    }
    start_preview({std::move(done)});
}

void Reloader::start_preview(std::vector<PreviewDone> waiting) {
    auto warnings = std::make_shared<std::vector<config::Diagnostic>>();
    config::LoadOptions options = config::default_load_options();
    options.load_warnings = warnings.get();
    auto started = m_previewing.start(
        m_config_dir, options, nullptr, [this, waiting, warnings](config::LoadResult tree) {
            PreviewResult result;
            try {
                result = preview_tree(std::move(tree));
                if (result) {
                    for (const config::Diagnostic& warning : *warnings) {
                        result->warnings.push_back(warning.to_string());
                    }
                }
            } catch (const std::exception& e) {
                result = std::unexpected(std::string("reload --dry-run failed: ") + e.what());
            }
            answer(waiting, result);
            if (m_preview_next.empty()) {
                return;
            }
            std::vector<PreviewDone> next;
            next.swap(m_preview_next);
            if (m_host.supervisor().shutting_down()) {
                answer(next, std::unexpected("pkitd is shutting down"));
            } else {
                start_preview(std::move(next));
            }
        });
    if (!started) {
        answer(waiting,
               std::unexpected("cannot start reading the configuration: " + started.error()));
    }
}

Reloader::PreviewResult Reloader::preview_tree(config::LoadResult tree) {
    auto refuse = [](const std::vector<config::Diagnostic>& diagnostics) {
        std::string errors;
        for (const config::Diagnostic& d : diagnostics) {
            errors += (errors.empty() ? "" : "\n") + d.to_string();
        }
        return std::unexpected(errors);
    };
    if (!tree) {
        return refuse(tree.error());
    }
    if (auto errors = m_host.tree_errors(*tree); !errors.empty()) {
        return refuse(errors);
    }
    // The counts `scale` set, as keep_scaled_counts() would keep them, without
    // forgetting those a changed file overrides.
    for (const auto& [name, scaled] : m_scaled) {
        if (config::count_instances(*tree, name) == scaled.file_count) {
            config::set_instances(*tree, name, scaled.count);
        }
    }
    DaemonPort::PreviewReport report{m_host.supervisor().preview_reload(*tree), {}};
    BackgroundLoad::discard(m_loop, std::move(*tree));
    return report;
}

}  // namespace pkit::shell
