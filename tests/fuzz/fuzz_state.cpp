// Fuzz target: an upgrade's state file (SPEC §16) through the reader that
// `pkitd --resume FD` runs, onto a supervisor of four services. Whatever the bytes, the
// reader must return without a sanitizer finding; the counts of `scale` it accepts must
// apply to a tree; a state it accepts must drive the core (every run's exit, every
// deadline) without one, and written again and read back it must give the same
// document.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "config/instances.hpp"
#include "daemon/core/persist.hpp"
#include "daemon/shell/upgrade/state_file.hpp"

namespace {

using namespace std::chrono_literals;
using pkit::core::Now;
using pkit::core::TimePoint;

void check(bool ok) {
    if (!ok) {
        std::abort();
    }
}

pkit::config::ServiceSpec service(std::string name) {
    pkit::config::ServiceSpec s;
    s.name = name;
    s.file = "services/" + name + ".toml";
    s.command = {"/bin/false"};
    s.restart.jitter = false;
    return s;
}

pkit::core::Supervisor supervisor() {
    pkit::config::Tree tree;
    tree.dir = "/etc/pkit";
    pkit::config::ServiceSpec ready = service("db");
    ready.ready.edit().probe.kind = pkit::config::ProbeKind::tcp;
    tree.services = {service("api"), ready, service("job"), service("web")};
    return pkit::core::Supervisor(std::move(tree), [] { return 0.5; });
}

// A tree with the file `worker` at two instances, for the counts `scale` set.
pkit::config::Tree workers() {
    pkit::config::Tree tree;
    tree.dir = "/etc/pkit";
    for (unsigned k = 1; k <= 2; ++k) {
        pkit::config::ServiceSpec s = service("worker@" + std::to_string(k));
        s.file = "services/worker.toml";
        s.instance = k;
        tree.services.push_back(std::move(s));
    }
    return tree;
}

Now at(double seconds) {
    auto d =
        std::chrono::duration_cast<pkit::config::Duration>(std::chrono::duration<double>(seconds));
    return Now{TimePoint{} + 1000s + d, 1e9 + seconds};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    auto parsed = pkit::proto::JsonTree::parse(text);
    // The flat tree takes what nlohmann takes, and nothing else.
    check(parsed.has_value() == !nlohmann::json::parse(text, nullptr, false).is_discarded());
    if (!parsed) {
        return 0;
    }
    const pkit::proto::JsonTree& doc = *parsed;
    // The counts `scale` set that the reader accepts apply to a tree whose file still
    // has the count each was set against, and give the instances they say.
    if (auto facts = pkit::shell::upgrade::read_facts(doc)) {
        pkit::config::Tree tree = workers();
        std::vector<pkit::shell::upgrade::ScaledFact> first(
            facts->scaled.begin(),
            facts->scaled.begin() +
                static_cast<std::ptrdiff_t>(std::min<std::size_t>(facts->scaled.size(), 4)));
        for (const auto& fact : pkit::shell::upgrade::apply_scaled(first, tree)) {
            check(pkit::config::count_instances(tree, fact.file) == fact.count);
        }
        // The client connections it accepts go through a writing and a reading unchanged.
        pkit::core::Supervisor empty = supervisor();
        pkit::shell::upgrade::DaemonFacts clients;
        clients.clients = facts->clients;
        auto back = pkit::proto::JsonTree::parse(
            pkit::shell::upgrade::write_state(empty, clients, at(0).mono));
        check(back.has_value());
        auto reread = pkit::shell::upgrade::read_facts(*back);
        check(reread.has_value() && reread->clients == facts->clients);
    }
    pkit::core::Supervisor sup = supervisor();
    if (!pkit::shell::upgrade::apply_state(doc, sup, at(0).mono)) {
        return 0;
    }
    sup.resumed(at(0));
    const std::string again = pkit::shell::upgrade::write_state(sup, {}, at(0).mono);
    auto again_doc = pkit::proto::JsonTree::parse(again);
    check(again_doc.has_value());
    pkit::core::Supervisor copy = supervisor();
    check(pkit::shell::upgrade::apply_state(*again_doc, copy, at(0).mono).has_value());
    copy.resumed(at(0));
    check(pkit::shell::upgrade::write_state(copy, {}, at(0).mono) == again);
    for (std::size_t i = 0; i < sup.size(); ++i) {
        if (pid_t pid = sup.service(i).pid(); pid != 0) {
            sup.on_exit(pid, pkit::core::ProcessExit{1, std::nullopt}, at(1));
        }
    }
    for (double t : {2.0, 60.0, 3600.0}) {
        sup.on_time(at(t));
        sup.take_actions();
    }
    sup.shutdown(at(4000));
    sup.take_actions();
    return 0;
}
