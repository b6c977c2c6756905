// `instances` (SPEC §13): one file defining N services NAME@1 ... NAME@N, each a full
// service. Expanded right after parsing, so everything after (the checks across files,
// cycles, the tree pkitd runs) sees ordinary services with ordinary names. `after`
// elements and group members naming the file stand for all its instances, in order:
// expanded for the checks, then written back as the file's name, which pkitd resolves
// to the instances the file has at the time (those `scale` adds too).

#include <algorithm>
#include <unordered_map>

#include "config/instances.hpp"
#include "config/load_steps.hpp"

namespace pkit::config::detail {
namespace {

using Counts = std::unordered_map<std::string, std::int64_t>;

std::string instance_name(const std::string& base, std::int64_t index) {
    return cat(base, "@", std::to_string(index));
}

// `names` with each name of `counts` replaced by its instances; `pos` kept parallel.
// The list as it was goes to `written` when anything was replaced.
void expand_names(const Counts& counts, std::vector<std::string>& names, std::vector<Pos>& pos,
                  std::optional<std::vector<std::string>>& written) {
    if (std::ranges::none_of(names, [&](const std::string& n) { return counts.contains(n); })) {
        return;
    }
    written = names;
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
        expand_names(counts, draft.spec.after, draft.after_pos, draft.written_after);
    }
    daemon.written_members.resize(daemon.spec.groups.size());
    for (std::size_t g = 0; g < daemon.spec.groups.size(); ++g) {
        expand_names(counts, daemon.spec.groups[g].members, daemon.member_pos[g],
                     daemon.written_members[g]);
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

void restore_written_names(std::vector<ServiceDraft>& services, DaemonDraft& daemon) {
    for (ServiceDraft& draft : services) {
        if (draft.written_after) {
            draft.spec.after = std::move(*draft.written_after);
            draft.written_after.reset();
        }
    }
    for (std::size_t g = 0; g < daemon.written_members.size(); ++g) {
        if (daemon.written_members[g]) {
            daemon.spec.groups[g].members = std::move(*daemon.written_members[g]);
            daemon.written_members[g].reset();
        }
    }
}

}  // namespace pkit::config::detail

namespace pkit::config {

std::string_view base_name(std::string_view name) {
    return name.substr(0, name.find('@'));
}

std::size_t count_instances(const Tree& tree, std::string_view base) {
    std::size_t count = 0;
    for (const ServiceSpec& spec : tree.services) {
        if (spec.instance != 0 && base_name(spec.name) == base) {
            ++count;
        }
    }
    return count;
}

bool load_order(const ServiceSpec& a, const ServiceSpec& b) {
    std::string_view base_a = base_name(a.name);
    std::string_view base_b = base_name(b.name);
    if (base_a != base_b) {
        // "web.toml" against "web-x.toml": the file names decide, as the loader read them.
        std::string file_a = std::string(base_a) + ".toml";
        std::string file_b = std::string(base_b) + ".toml";
        return file_a < file_b;
    }
    return a.instance < b.instance;
}

void set_instances(Tree& tree, std::string_view base, std::size_t count) {
    std::size_t have = count_instances(tree, base);
    auto is_extra = [&](std::string_view name, unsigned instance) {
        return instance > count && base_name(name) == base && name.size() > base.size();
    };
    std::erase_if(tree.services,
                  [&](const ServiceSpec& spec) { return is_extra(spec.name, spec.instance); });
    if (have < count) {
        const ServiceSpec* first = tree.find_service(std::string(base) + "@1");
        std::vector<ServiceSpec> copies;
        for (std::size_t k = have + 1; k <= count && first != nullptr; ++k) {
            ServiceSpec copy = *first;
            copy.name = std::string(base) + "@" + std::to_string(k);
            copy.instance = static_cast<unsigned>(k);
            copy.stamp = {};  // made here, not by a parse
            copies.push_back(std::move(copy));
        }
        for (ServiceSpec& copy : copies) {
            tree.services.push_back(std::move(copy));
        }
        std::ranges::stable_sort(tree.services, load_order);
    }
}

}  // namespace pkit::config
