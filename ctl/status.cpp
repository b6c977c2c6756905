// pkitctl status [--tree] [--resources] [NAME...]: the status table (or tree, or the protocol's
// result with --json). Exit 3 when a service named on the command line is not running,
// so `pkitctl status web && ...` works as a readiness check.

#include <iostream>
#include <memory>

#include "ctl/commands.hpp"
#include "ctl/common.hpp"
#include "ctl/render.hpp"
#include "ctl/status_args.hpp"

namespace pkit::ctl {

int run_status(const GlobalOptions& global, const StatusOptions& options) {
    proto::Request request{.cmd = proto::Command::status, .services = options.names};
    request.resources = options.resources;
    std::vector<proto::ServiceStatus> services;
    if (global.json) {
        // The protocol's whole result, as it is; its rows are read only for exit 3.
        auto result = call(global, request);
        if (!options.names.empty()) {
            services = result.at("services").get<std::vector<proto::ServiceStatus>>();
        }
        print_json(result);
    } else {
        // Only what the table and the tree show (the state among it, for exit 3), read
        // straight into rows: a thousand services' reply is half as long.
        request.fields = k_rendered_fields;
        services = call_for_rows(global, request, timeout_of(global));
        std::cout << (options.tree ? render_tree(services, use_color())
                                   : render_table(services, use_color()));
    }
    if (!options.names.empty()) {
        for (const auto& status : services) {
            if (status.state != "running") {
                return k_exit_not_running;
            }
        }
    }
    return k_exit_ok;
}

CommandSpec add_status(const GlobalOptions& global) {
    auto options = std::make_shared<StatusOptions>();
    return {.name = "status",
            .description = "show the services' state",
            .options = {{.names = "--tree",
                         .help = "draw groups and their members",
                         .target = &options->tree},
                        {.names = "--resources",
                         .help = "add PROCS, CPU (seconds) and MEM columns: each run's "
                                 "process group",
                         .target = &options->resources},
                        {.names = "NAME",
                         .help = "only these services (exit 3 if one is not running)",
                         .target = &options->names}},
            .run = [&global, options] { return run_status(global, *options); }};
}

}  // namespace pkit::ctl
