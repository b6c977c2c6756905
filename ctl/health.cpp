// pkitctl health: pkitd's own readiness (SPEC §11). Prints "ready", or one line a
// service that keeps pkitd from being ready, with its reason; exit 0 when ready and 3
// when not, so it serves as a Docker HEALTHCHECK or a Kubernetes exec probe.

#include <iostream>

#include "ctl/commands.hpp"
#include "ctl/common.hpp"

namespace pkit::ctl {
namespace {

int run_health(const GlobalOptions& global) {
    auto result = call(global, proto::Request{.cmd = proto::Command::health});
    auto health = result.get<proto::HealthResult>();
    if (global.json) {
        print_json(result);
    } else if (health.ready) {
        std::cout << "ready\n";
    } else if (health.not_ready.empty()) {
        std::cout << "not ready: pkitd is shutting down\n";
    } else {
        for (const auto& entry : health.not_ready) {
            std::cout << entry.name << ": " << entry.reason << "\n";
        }
    }
    // 3 is SPEC §10's "not in the state asked for", as for `status NAME`.
    return health.ready ? k_exit_ok : k_exit_not_running;
}

}  // namespace

CommandSpec add_health(const GlobalOptions& global) {
    return {.name = "health",
            .description = "pkitd's own readiness: lists what is not ready (exit 3 when not ready)",
            .run = [&global] { return run_health(global); }};
}

}  // namespace pkit::ctl
