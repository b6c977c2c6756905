// Dependency cycles. A service waits for its `after` targets, and a group member
// waits for the member before it (members start in order), so both kinds of edge
// count. Each strongly connected set of services is reported once, at its first
// service in name order, with one shortest cycle through that service.

#include <algorithm>
#include <deque>

#include "config/load_steps.hpp"

namespace pkit::config::detail {
namespace {

struct Edge {
    std::size_t to = 0;
    bool by_group = false;  // member order rather than `after`
    std::size_t group = 0;  // index into the daemon's groups when by_group
    Pos pos;                // where the edge is written
};

using Graph = std::vector<std::vector<Edge>>;

Graph build_graph(const std::vector<ServiceDraft>& services, const DaemonDraft& daemon) {
    Graph graph(services.size());
    auto index_of = [&](const std::string& name) -> std::optional<std::size_t> {
        auto it =
            std::ranges::find(services, name, [](const ServiceDraft& s) { return s.spec.name; });
        if (it == services.end()) {
            return std::nullopt;
        }
        return static_cast<std::size_t>(it - services.begin());
    };
    for (std::size_t i = 0; i < services.size(); ++i) {
        for (const std::string& target : services[i].spec.after) {
            auto to = index_of(target);
            if (to && *to != i) {
                graph[i].push_back({.to = *to, .pos = services[i].after_key});
            }
        }
    }
    // A member listed again (twice, or in a second group) is an error reported
    // elsewhere; only its first place gives it an edge.
    std::vector<bool> placed(services.size(), false);
    for (std::size_t g = 0; g < daemon.spec.groups.size(); ++g) {
        std::optional<std::size_t> previous;
        const auto& members = daemon.spec.groups[g].members;
        for (std::size_t m = 0; m < members.size(); ++m) {
            auto current = index_of(members[m]);
            if (!current || placed[*current]) {
                continue;
            }
            placed[*current] = true;
            if (previous) {
                graph[*current].push_back({.to = *previous,
                                           .by_group = true,
                                           .group = g,
                                           .pos = daemon.member_pos[g][m]});
            }
            previous = current;
        }
    }
    return graph;
}

std::vector<bool> reachable(const Graph& graph, std::size_t from) {
    std::vector<bool> seen(graph.size(), false);
    std::deque<std::size_t> queue{from};
    while (!queue.empty()) {
        std::size_t node = queue.front();
        queue.pop_front();
        for (const Edge& edge : graph[node]) {
            if (!seen[edge.to]) {
                seen[edge.to] = true;
                queue.push_back(edge.to);
            }
        }
    }
    return seen;
}

// The edges of a shortest path from `from` to `to`, staying inside `allowed`.
std::vector<const Edge*> shortest_path(const Graph& graph, std::size_t from, std::size_t to,
                                       const std::vector<bool>& allowed) {
    std::vector<const Edge*> via(graph.size(), nullptr);
    std::vector<std::size_t> parent(graph.size(), graph.size());
    std::vector<bool> seen(graph.size(), false);
    seen[from] = true;
    std::deque<std::size_t> queue{from};
    while (!queue.empty() && !seen[to]) {
        std::size_t node = queue.front();
        queue.pop_front();
        for (const Edge& edge : graph[node]) {
            if (allowed[edge.to] && !seen[edge.to]) {
                seen[edge.to] = true;
                via[edge.to] = &edge;
                parent[edge.to] = node;
                queue.push_back(edge.to);
            }
        }
    }
    std::vector<const Edge*> path;
    for (std::size_t node = to; node != from; node = parent[node]) {
        path.push_back(via[node]);
    }
    std::ranges::reverse(path);
    return path;
}

// The cycle through `start`: `after` edges are preferred for its first step, so the
// report lands on its `after` key whenever it has one on the cycle.
std::vector<const Edge*> cycle_through(const Graph& graph, std::size_t start,
                                       const std::vector<bool>& component) {
    std::vector<const Edge*> best;
    for (bool by_group : {false, true}) {
        for (const Edge& edge : graph[start]) {
            if (edge.by_group != by_group || !component[edge.to]) {
                continue;
            }
            std::vector<const Edge*> path{&edge};
            if (edge.to != start) {
                auto rest = shortest_path(graph, edge.to, start, component);
                path.insert(path.end(), rest.begin(), rest.end());
            }
            if (best.empty() || path.size() < best.size()) {
                best = std::move(path);
            }
        }
        if (!best.empty()) {
            return best;
        }
    }
    return best;
}

}  // namespace

void report_cycles(const std::vector<ServiceDraft>& services, const DaemonDraft& daemon,
                   std::vector<Diagnostic>& out) {
    Graph graph = build_graph(services, daemon);
    std::vector<std::vector<bool>> reach;
    for (std::size_t i = 0; i < graph.size(); ++i) {
        reach.push_back(reachable(graph, i));
    }
    std::vector<bool> reported(graph.size(), false);
    for (std::size_t start = 0; start < graph.size(); ++start) {
        if (reported[start] || !reach[start][start]) {
            continue;
        }
        std::vector<bool> component(graph.size(), false);
        for (std::size_t other = 0; other < graph.size(); ++other) {
            component[other] = reach[start][other] && reach[other][start];
            reported[other] = reported[other] || component[other];
        }
        auto cycle = cycle_through(graph, start, component);
        std::string names = services[start].spec.name;
        std::string reasons;
        std::size_t from = start;
        for (const Edge* edge : cycle) {
            names += cat(" -> ", services[edge->to].spec.name);
            if (edge->by_group) {
                reasons += cat(reasons.empty() ? " (" : "; ", quote(services[from].spec.name),
                               " follows ", quote(services[edge->to].spec.name), " in groups.",
                               daemon.spec.groups[edge->group].name, ".members");
            }
            from = edge->to;
        }
        if (!reasons.empty()) {
            reasons += ")";
        }
        const Edge& first = *cycle.front();
        Diags d(first.by_group ? daemon.file : services[start].spec.file, out);
        d.error(first.pos, cat("dependency cycle: ", names, reasons));
    }
}

}  // namespace pkit::config::detail
