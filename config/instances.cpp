// `instances` (SPEC §13): one file defining N services NAME@1 ... NAME@N, each a full
// service. Expanded right after parsing, so everything after (the checks across files,
// cycles, the tree pkitd runs) sees ordinary services with ordinary names; `after`
// elements and group members naming the file stand for all its instances, in order.

#include <unordered_map>

#include "config/load_steps.hpp"

namespace pkit::config::detail {
namespace {

using Counts = std::unordered_map<std::string, std::int64_t>;

std::string instance_name(const std::string& base, std::int64_t index) {
    return cat(base, "@", std::to_string(index));
}

// `names` with each name of `counts` replaced by its instances; `pos` kept parallel.
void expand_names(const Counts& counts, std::vector<std::string>& names, std::vector<Pos>& pos) {
    std::vector<std::string> out;
    std::vector<Pos> out_pos;
    for (std::size_t i = 0; i < names.size(); ++i) {
        auto found = counts.find(names[i]);
        if (found == counts.end()) {
            out.push_back(std::move(names[i]));
            out_pos.push_back(pos[i]);
            continue;
        }
        for (std::int64_t k = 1; k <= found->second; ++k) {
            out.push_back(instance_name(found->first, k));
            out_pos.push_back(pos[i]);
        }
    }
    names = std::move(out);
    pos = std::move(out_pos);
}

}  // namespace

void expand_instances(std::vector<ServiceDraft>& services, DaemonDraft& daemon,
                      std::vector<std::string>& known) {
    Counts counts;
    for (const ServiceDraft& draft : services) {
        if (draft.instances > 1) {
            counts.emplace(draft.spec.name, draft.instances);
        }
    }
    if (counts.empty()) {
        return;
    }
    for (ServiceDraft& draft : services) {
        expand_names(counts, draft.spec.after, draft.after_pos);
    }
    for (std::size_t g = 0; g < daemon.spec.groups.size(); ++g) {
        expand_names(counts, daemon.spec.groups[g].members, daemon.member_pos[g]);
    }
    std::vector<ServiceDraft> expanded;
    expanded.reserve(services.size());
    for (ServiceDraft& draft : services) {
        if (draft.instances <= 1) {
            expanded.push_back(std::move(draft));
            continue;
        }
        for (std::int64_t k = 1; k <= draft.instances; ++k) {
            ServiceDraft& copy = k < draft.instances ? expanded.emplace_back(draft)
                                                     : expanded.emplace_back(std::move(draft));
            copy.spec.name = instance_name(copy.spec.name, k);
            copy.spec.instance = static_cast<unsigned>(k);
            copy.instances = 1;
            if (k > 1) {
                copy.variable_texts.clear();  // warned about once, for the file
            }
            known.push_back(copy.spec.name);
        }
    }
    services = std::move(expanded);
}

}  // namespace pkit::config::detail
