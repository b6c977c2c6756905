// pkitctl start|stop|restart NAME... | --all: operator commands, then the resulting
// status rows. pkitd replies to stop and restart once the runs have ended (or
// restarted), so the rows show the outcome, not the request.

#include <iostream>
#include <memory>

#include "ctl/commands.hpp"
#include "ctl/render.hpp"

namespace pkit::ctl {
namespace {

struct ControlOptions {
    proto::Command command = proto::Command::start;
    std::vector<std::string> names;
    bool all = false;
};

int run_control(const GlobalOptions& global, const ControlOptions& options) {
    auto name = std::string(proto::to_string(options.command));
    if (options.names.empty() && !options.all) {
        throw usage_error(name + ": name at least one service, or --all");
    }
    if (!options.names.empty() && options.all) {
        throw usage_error(name + ": give service names or --all, not both");
    }
    proto::Request request{.cmd = options.command, .services = options.names, .all = options.all};
    auto result = call(global, request);
    if (global.json) {
        print_json(result);
    } else {
        std::cout << render_table(services_of(result), use_color());
    }
    return k_exit_ok;
}

Subcommand add_one(CLI::App& app, const GlobalOptions& global, proto::Command command,
                   const std::string& description) {
    auto options = std::make_shared<ControlOptions>();
    options->command = command;
    auto* sub = app.add_subcommand(std::string(proto::to_string(command)), description);
    sub->add_option("NAME", options->names, "the services");
    sub->add_flag("--all", options->all, "every service");
    return {sub, [&global, options] { return run_control(global, *options); }};
}

}  // namespace

std::vector<Subcommand> add_control(CLI::App& app, const GlobalOptions& global) {
    return {
        add_one(app, global, proto::Command::start, "start stopped services"),
        add_one(app, global, proto::Command::stop,
                "stop services (they stay stopped until started)"),
        add_one(app, global, proto::Command::restart, "restart services with fresh runs"),
    };
}

}  // namespace pkit::ctl
