// pkitctl upgrade: pkitd replaces itself with a new binary (by default the one it runs
// from) and keeps every service running (SPEC §16). pkitd answers before its exec; the
// command then waits until the new pkitd answers `ping` with the version it announced.

#include <chrono>
#include <iostream>
#include <memory>
#include <thread>

#include "ctl/commands.hpp"
#include "ctl/common.hpp"

namespace pkit::ctl {
namespace {

struct UpgradeOptions {
    std::string binary;
};

int run_upgrade(const GlobalOptions& global, const UpgradeOptions& options) {
    auto result =
        call(global, proto::Request{.cmd = proto::Command::upgrade, .binary = options.binary});
    const std::string from = result.value("from", "");
    const std::string to = result.value("to", "");
    // The new pkitd serves as soon as it has read the state; until then connections
    // wait in the socket's backlog.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    proto::json ping;
    for (;;) {
        try {
            ping = call(global, proto::Request{.cmd = proto::Command::ping});
            if (ping.value("version", "") == to) {
                break;
            }
        } catch (const CtlError&) {
        }
        if (std::chrono::steady_clock::now() > deadline) {
            throw CtlError(k_exit_unreachable, "pkitd did not come back as version " + to +
                                                   " within 30 s; see its log");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (global.json) {
        print_json(proto::json{{"from", from}, {"to", to}, {"pid", ping.value("pid", 0)}});
        return k_exit_ok;
    }
    std::cout << "upgraded pkitd " << from << " -> " << to << " (pid " << ping.value("pid", 0)
              << ")\n";
    return k_exit_ok;
}

}  // namespace

CommandSpec add_upgrade(const GlobalOptions& global) {
    auto options = std::make_shared<UpgradeOptions>();
    return {.name = "upgrade",
            .description = "replace pkitd with a new binary, keeping every service running",
            .options = {{.names = "--binary",
                         .help = "the new pkitd (default: the binary pkitd runs from)",
                         .target = &options->binary,
                         .type_name = "PATH"}},
            .run = [&global, options] { return run_upgrade(global, *options); }};
}

}  // namespace pkit::ctl
