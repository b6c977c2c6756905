// pkitctl upgrade: pkitd replaces itself with a new binary (by default the one it runs
// from) and keeps every service running (SPEC §16). The new pkitd takes the request's
// connection over and answers it once it serves; a pkitd that hands over no clients (an
// older one, or an upgrade to one) answers before its exec, and the command then waits
// until the new pkitd answers `ping` with the version it announced. Both within
// --timeout, 60 s when not given.

#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <thread>

#include "ctl/client.hpp"
#include "ctl/commands.hpp"
#include "ctl/common.hpp"

namespace pkit::ctl {
namespace {

using Clock = std::chrono::steady_clock;

// Without --timeout: the check (at most 5 s), the trial (at most 10 s) and the start of
// a large pkitd, with room to spare.
constexpr std::chrono::seconds k_default_timeout{60};

struct UpgradeOptions {
    std::string binary;
};

std::chrono::milliseconds left_until(Clock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    return std::max(left, std::chrono::milliseconds(1));
}

// Pings until pkitd answers (with `version`, when given) or `deadline` passes; the
// last answer, or nullopt.
std::optional<proto::json> ping_until(const GlobalOptions& global, const std::string& version,
                                      Clock::time_point deadline) {
    for (;;) {
        try {
            proto::json ping =
                call(global, proto::Request{.cmd = proto::Command::ping}, left_until(deadline));
            if (version.empty() || ping.value("version", "") == version) {
                return ping;
            }
        } catch (const CtlError&) {
        }
        if (Clock::now() >= deadline) {
            return std::nullopt;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

int report(const GlobalOptions& global, const std::string& from, const std::string& to, int pid,
           long restarted) {
    if (global.json) {
        proto::json out{{"from", from}, {"to", to}, {"pid", pid}};
        if (restarted >= 0) {
            out["restarted_services"] = restarted;
        }
        print_json(out);
    } else if (restarted <= 0) {
        std::cout << "upgraded pkitd " << from << " -> " << to << " (pid " << pid << ")\n";
    }
    if (restarted > 0) {
        std::cerr << "pkitctl: warning: pkitd " << to << " (pid " << pid
                  << ") could not resume the state of pkitd " << from << " and started "
                  << restarted << " service" << (restarted == 1 ? "" : "s")
                  << " afresh; see its log\n";
        return k_exit_daemon_error;
    }
    return k_exit_ok;
}

int run_upgrade(const GlobalOptions& global, const UpgradeOptions& options) {
    const std::chrono::milliseconds timeout =
        global.timeout_given ? timeout_of(global) : std::chrono::milliseconds(k_default_timeout);
    const Clock::time_point deadline = Clock::now() + timeout;
    std::optional<proto::json> result;
    std::string path;
    {
        Client client(global, timeout);
        path = client.path();
        client.send(proto::Request{.cmd = proto::Command::upgrade, .binary = options.binary});
        if (auto reply = client.read(deadline)) {
            result = result_of(std::move(*reply), path);
        }
    }
    if (result && result->contains("restarted_services")) {
        // The new pkitd answered, on the connection it took over.
        return report(global, result->value("from", ""), result->value("to", ""),
                      result->value("pid", 0), result->value("restarted_services", 0L));
    }
    if (!result) {
        // The connection ended without an answer: the new pkitd could not take it over.
        auto ping = ping_until(global, "", deadline);
        if (!ping) {
            throw CtlError(k_exit_unreachable,
                           "pkitd closed the connection without answering "
                           "the upgrade, and did not answer again within " +
                               seconds_text(timeout) + "; see its log");
        }
        throw CtlError(k_exit_daemon_error,
                       "pkitd closed the connection without answering the upgrade; pkitd " +
                           ping->value("version", "") + " (pid " +
                           std::to_string(ping->value("pid", 0)) + ") answers now; see its log");
    }
    // An answer before the exec: the new pkitd serves once it has read the state; until
    // then connections wait in the socket's backlog.
    const std::string to = result->value("to", "");
    auto ping = ping_until(global, to, deadline);
    if (!ping) {
        throw CtlError(k_exit_unreachable, "pkitd did not come back as version " + to + " within " +
                                               seconds_text(timeout) + "; see its log");
    }
    return report(global, result->value("from", ""), to, ping->value("pid", 0), -1);
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
