// Dependency cycles. A service waits for its `after` targets, and a group member
// waits for the member before it (members start in order), so both kinds of edge
// count. Each strongly connected set of services is reported once, at its first
// service in name order, with one shortest cycle through that service.
//
// Linear in services and edges: one pass of Tarjan's algorithm finds the components,
// then two breadth-first searches inside each cyclic component find its cycle.

#include <algorithm>
#include <string_view>
#include <unordered_map>

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
constexpr std::size_t k_none = static_cast<std::size_t>(-1);

Graph build_graph(const std::vector<ServiceDraft>& services, const DaemonDraft& daemon) {
    Graph graph(services.size());
    std::unordered_map<std::string_view, std::size_t> index;
    index.reserve(services.size());
    for (std::size_t i = 0; i < services.size(); ++i) {
        index.emplace(services[i].spec.name, i);
    }
    auto index_of = [&](const std::string& name) -> std::optional<std::size_t> {
        auto it = index.find(name);
        if (it == index.end()) {
            return std::nullopt;
        }
        return it->second;
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

// Strongly connected components (Tarjan's algorithm, without recursion: an `after`
// chain may be tens of thousands long). component[i] is i's component number.
std::vector<std::size_t> components(const Graph& graph) {
    const std::size_t n = graph.size();
    std::vector<std::size_t> component(n, k_none);
    std::vector<std::size_t> order(n, k_none);  // discovery order
    std::vector<std::size_t> low(n, 0);
    std::vector<bool> on_stack(n, false);
    std::vector<std::size_t> stack;
    std::vector<std::pair<std::size_t, std::size_t>> calls;  // (node, next edge)
    std::size_t counter = 0;
    std::size_t next_component = 0;
    for (std::size_t root = 0; root < n; ++root) {
        if (order[root] != k_none) {
            continue;
        }
        calls.push_back({root, 0});
        order[root] = low[root] = counter++;
        stack.push_back(root);
        on_stack[root] = true;
        while (!calls.empty()) {
            auto& [node, edge] = calls.back();
            if (edge < graph[node].size()) {
                std::size_t to = graph[node][edge++].to;
                if (order[to] == k_none) {
                    order[to] = low[to] = counter++;
                    stack.push_back(to);
                    on_stack[to] = true;
                    calls.push_back({to, 0});  // invalidates node and edge
                } else if (on_stack[to]) {
                    low[node] = std::min(low[node], order[to]);
                }
                continue;
            }
            std::size_t done = node;
            calls.pop_back();
            if (!calls.empty()) {
                std::size_t parent = calls.back().first;
                low[parent] = std::min(low[parent], low[done]);
            }
            if (low[done] == order[done]) {
                std::size_t member = k_none;
                do {
                    member = stack.back();
                    stack.pop_back();
                    on_stack[member] = false;
                    component[member] = next_component;
                } while (member != done);
                ++next_component;
            }
        }
    }
    return component;
}

// Breadth-first searches inside one component. The arrays are sized for the whole
// graph once; each search resets only the nodes it reached, so many small cycles
// cost no more than one big one.
class Searcher {
public:
    explicit Searcher(const Graph& graph, const std::vector<std::size_t>& component)
        : m_graph(graph),
          m_component(component),
          m_reverse(graph.size()),
          m_distance(graph.size(), k_none),
          m_parent(graph.size(), k_none),
          m_via(graph.size(), nullptr) {
        for (std::size_t from = 0; from < graph.size(); ++from) {
            for (const Edge& edge : graph[from]) {
                m_reverse[edge.to].push_back(from);
            }
        }
    }

    // The length of a shortest path from each node of `to`'s component to `to`;
    // k_none for nodes outside it. Valid until the next call.
    const std::vector<std::size_t>& distances_to(std::size_t to) {
        reset();
        m_distance[to] = 0;
        m_reached.push_back(to);
        for (std::size_t k = 0; k < m_reached.size(); ++k) {
            std::size_t node = m_reached[k];
            for (std::size_t from : m_reverse[node]) {
                if (m_component[from] == m_component[to] && m_distance[from] == k_none) {
                    m_distance[from] = m_distance[node] + 1;
                    m_reached.push_back(from);
                }
            }
        }
        return m_distance;
    }

    // The edges of a shortest path from `from` to `to` inside their component, the
    // first found breadth-first in edge order.
    std::vector<const Edge*> shortest_path(std::size_t from, std::size_t to) {
        reset();
        m_parent[from] = from;
        m_reached.push_back(from);
        for (std::size_t k = 0; k < m_reached.size() && m_parent[to] == k_none; ++k) {
            std::size_t node = m_reached[k];
            for (const Edge& edge : m_graph[node]) {
                if (m_component[edge.to] == m_component[from] && m_parent[edge.to] == k_none) {
                    m_parent[edge.to] = node;
                    m_via[edge.to] = &edge;
                    m_reached.push_back(edge.to);
                }
            }
        }
        std::vector<const Edge*> path;
        for (std::size_t node = to; node != from; node = m_parent[node]) {
            path.push_back(m_via[node]);
        }
        std::ranges::reverse(path);
        return path;
    }

private:
    void reset() {
        for (std::size_t node : m_reached) {
            m_distance[node] = k_none;
            m_parent[node] = k_none;
            m_via[node] = nullptr;
        }
        m_reached.clear();
    }

    const Graph& m_graph;
    const std::vector<std::size_t>& m_component;
    std::vector<std::vector<std::size_t>> m_reverse;
    std::vector<std::size_t> m_distance;
    std::vector<std::size_t> m_parent;
    std::vector<const Edge*> m_via;
    std::vector<std::size_t> m_reached;
};

// The cycle through `start`: a shortest one, and `after` edges are preferred for its
// first step, so the report lands on its `after` key whenever it has one on the
// cycle. Among first steps of the same length the first in edge order wins.
std::vector<const Edge*> cycle_through(const Graph& graph, std::size_t start,
                                       const std::vector<std::size_t>& component,
                                       Searcher& search) {
    const std::vector<std::size_t>& distance = search.distances_to(start);
    for (bool by_group : {false, true}) {
        const Edge* best = nullptr;
        for (const Edge& edge : graph[start]) {
            if (edge.by_group != by_group || component[edge.to] != component[start]) {
                continue;
            }
            if (best == nullptr || distance[edge.to] < distance[best->to]) {
                best = &edge;
            }
        }
        if (best != nullptr) {
            std::vector<const Edge*> path{best};
            auto rest = search.shortest_path(best->to, start);
            path.insert(path.end(), rest.begin(), rest.end());
            return path;
        }
    }
    return {};
}

}  // namespace

void report_cycles(const std::vector<ServiceDraft>& services, const DaemonDraft& daemon,
                   std::vector<Diagnostic>& out) {
    Graph graph = build_graph(services, daemon);
    std::vector<std::size_t> component = components(graph);
    // A component is a cycle when it has two services or more (there are no edges
    // from a service to itself); it is reported at its first service.
    std::vector<std::size_t> size(graph.size(), 0);
    for (std::size_t c : component) {
        ++size[c];
    }
    std::vector<bool> reported(graph.size(), false);
    Searcher search(graph, component);
    for (std::size_t start = 0; start < graph.size(); ++start) {
        std::size_t c = component[start];
        if (reported[c] || size[c] < 2) {
            continue;
        }
        reported[c] = true;
        auto cycle = cycle_through(graph, start, component, search);
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
