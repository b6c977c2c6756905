// Reloader::scale (SPEC §13): a new count of a file's instances, applied as a reload of
// the running tree with that count, so that the instances that stay are untouched and
// the added and removed ones start and stop as a reload's would.

#include <algorithm>

#include "config/instances.hpp"
#include "daemon/shell/reload/reloader.hpp"

namespace pkit::shell {

config::Tree Reloader::running_tree() const {
    const core::Supervisor& sup = m_host.supervisor();
    config::Tree tree{.dir = m_config_dir, .daemon = sup.daemon_spec()};
    for (std::size_t i = 0; i < sup.size(); ++i) {
        if (!sup.retired(i)) {
            tree.services.push_back(sup.service(i).spec());
        }
    }
    std::ranges::stable_sort(tree.services, config::load_order);
    return tree;
}

void Reloader::keep_scaled_counts(config::Tree& tree) {
    for (auto it = m_scaled.begin(); it != m_scaled.end();) {
        std::size_t file_count = config::count_instances(tree, it->first);
        if (file_count == 0 || file_count != it->second.file_count) {
            it = m_scaled.erase(it);  // the file changed its count, or went: it decides
            continue;
        }
        config::set_instances(tree, it->first, it->second.count);
        ++it;
    }
}

std::optional<std::string> Reloader::scale(const std::string& name, int count) {
    if (m_host.supervisor().shutting_down()) {
        return "pkitd is shutting down";
    }
    config::Tree tree = running_tree();
    std::size_t have = config::count_instances(tree, name);
    auto [entry, added] = m_scaled.try_emplace(name, Scaled{have, 0});
    entry->second.count = static_cast<std::size_t>(count);
    if (entry->second.count == entry->second.file_count) {
        m_scaled.erase(entry);  // back to the file's own count
    }
    config::set_instances(tree, name, static_cast<std::size_t>(count));
    core::ReloadOutcome outcome = m_host.apply_tree(std::move(tree), std::nullopt);
    m_host.log("info", "scale: " + name + " to " + std::to_string(count) + " instances (" +
                           std::to_string(outcome.added.size()) + " added, " +
                           std::to_string(outcome.removed.size()) + " removed)");
    return std::nullopt;
}

std::vector<upgrade::ScaledFact> Reloader::scaled_facts() const {
    std::vector<upgrade::ScaledFact> facts;
    for (const auto& [file, scaled] : m_scaled) {
        facts.push_back({file, scaled.file_count, scaled.count});
    }
    return facts;
}

void Reloader::resume(const upgrade::DaemonFacts& facts) {
    // The counts `scale` set, which main applied to the tree this pkitd was made with
    // where the file's own count was still theirs.
    for (const upgrade::ScaledFact& f : facts.scaled) {
        if (m_host.supervisor().find_all(f.file).size() == f.count) {
            m_scaled[f.file] = Scaled{f.file_count, f.count};
        }
    }
}

}  // namespace pkit::shell
