#pragma once
// pkitctl's subcommands, one file each. Every add_… function declares its subcommand
// on `app` with an options struct of its own (held by the runner, never in a static),
// and returns the runner main calls when that subcommand was given. A runner returns
// the exit status, or throws CtlError.

#include <functional>
#include <vector>

#include <CLI/CLI.hpp>

#include "ctl/common.hpp"

namespace pkit::ctl {

struct Subcommand {
    CLI::App* app = nullptr;
    std::function<int()> run;
};

Subcommand add_status(CLI::App& app, const GlobalOptions& global);
std::vector<Subcommand> add_control(CLI::App& app, const GlobalOptions& global);  // start...
Subcommand add_signal(CLI::App& app, const GlobalOptions& global);
Subcommand add_logs(CLI::App& app, const GlobalOptions& global);
Subcommand add_events(CLI::App& app, const GlobalOptions& global);
Subcommand add_explain(CLI::App& app, const GlobalOptions& global);
Subcommand add_reload(CLI::App& app, const GlobalOptions& global);
Subcommand add_shutdown(CLI::App& app, const GlobalOptions& global);
Subcommand add_check(CLI::App& app, const GlobalOptions& global);
Subcommand add_wait(CLI::App& app, const GlobalOptions& global);
Subcommand add_health(CLI::App& app, const GlobalOptions& global);
Subcommand add_show(CLI::App& app, const GlobalOptions& global);

}  // namespace pkit::ctl
