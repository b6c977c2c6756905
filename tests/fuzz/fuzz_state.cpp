// Fuzz target: an upgrade's state file (SPEC §16) through the reader that
// `pkitd --resume FD` runs, onto a supervisor of four services. Whatever the bytes, the
// reader must return without a sanitizer finding; a state it accepts must drive the
// core (every run's exit, every deadline) without one, and written again and read
// back it must give the same document.

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string_view>

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

Now at(double seconds) {
    auto d =
        std::chrono::duration_cast<pkit::config::Duration>(std::chrono::duration<double>(seconds));
    return Now{TimePoint{} + 1000s + d, 1e9 + seconds};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
    if (doc.is_discarded()) {
        return 0;
    }
    pkit::core::Supervisor sup = supervisor();
    if (!pkit::shell::upgrade::apply_state(doc, sup, at(0).mono)) {
        return 0;
    }
    sup.resumed(at(0));
    const nlohmann::json again = pkit::shell::upgrade::write_state(sup, {}, at(0).mono);
    pkit::core::Supervisor copy = supervisor();
    check(pkit::shell::upgrade::apply_state(again, copy, at(0).mono).has_value());
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
