#pragma once
// What pkitd's main hands the Daemon beside the configuration: its paths, its log's
// form, what systemd and an upgrade in place passed on (daemon/main.cpp fills it).

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/loader.hpp"
#include "daemon/shell/io/output_writer.hpp"
#include "daemon/shell/io/systemd_notifier.hpp"
#include "daemon/shell/upgrade/attempt.hpp"
#include "daemon/shell/upgrade/state_file.hpp"

namespace pkit::shell {

struct DaemonOptions {
    std::string config_dir;
    std::string socket_path;
    bool socket_from_config = false;  // the path came from pkitd.toml's `socket`
    LogFormat log_format = LogFormat::text;
    // Why the socket is not the default one (an unprivileged pkitd), for the log; or empty.
    std::string socket_note;
    // NOTIFY_SOCKET and WATCHDOG_USEC of pkitd's own unit (SPEC §11 "Under systemd").
    SystemdEnvironment systemd;
    // What the start-up load parsed, for the reloads to reuse (null: every reload
    // parses every file).
    std::shared_ptr<config::LoadCache> load_cache;
    // Where pkitd reads its own cgroup and mounts from (SPEC §15).
    std::string proc_self = "/proc/self";
    // The running binary: what `upgrade` without a binary execs (SPEC §16).
    std::string binary;
    // After an upgrade in place: the daemon-wide part of the state the previous pkitd
    // handed over (pkitd --resume); the supervisor the Daemon is given holds the rest.
    std::optional<upgrade::DaemonFacts> resume;
    // The start-up load's warnings (config::LoadOptions::load_warnings), logged once
    // pkitd has started.
    std::vector<config::Diagnostic> load_warnings;
    // After an upgrade in place whose state could not be resumed (every service starts
    // afresh): what this pkitd still takes over, the control socket and its clients.
    std::optional<upgrade::Takeover> salvage;
};

}  // namespace pkit::shell
