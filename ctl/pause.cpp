// pkitctl pause|resume NAME... | --all (SPEC §15): freeze and thaw the services' runs
// through their cgroups, then the resulting status rows. NAME is a service or all of
// its instances, NAME@I one. pkitd refuses the whole request, changing nothing, when it
// uses no cgroups (`unsupported`) or when a named service has no run to pause
// (`not_running`); with --all, pause freezes every service that has a run and resume
// thaws every paused one.

#include <memory>

#include "ctl/commands.hpp"
#include "ctl/common.hpp"
#include "ctl/name_globs.hpp"

namespace pkit::ctl {
namespace {

struct PauseOptions {
    proto::Command command = proto::Command::pause;
    std::vector<std::string> names;
    bool all = false;
};

int run_pause(const GlobalOptions& global, const PauseOptions& options) {
    require_names_or_all(std::string(proto::to_string(options.command)), options.names,
                         options.all);
    proto::Request request{.cmd = options.command,
                           .services = expand_name_globs(global, options.names),
                           .all = options.all};
    return print_services(global, call(global, request));
}

CommandSpec add_one(const GlobalOptions& global, proto::Command command, std::string description,
                    std::string all_help) {
    auto options = std::make_shared<PauseOptions>();
    options->command = command;
    return CommandSpec{
        .name = std::string(proto::to_string(command)),
        .description = std::move(description),
        .options = {{.names = "NAME",
                     .help = "the services (NAME: all its instances; NAME@I: one; or a glob)",
                     .target = &options->names},
                    {.names = "--all", .help = std::move(all_help), .target = &options->all}},
        .run = [&global, options] { return run_pause(global, *options); }};
}

}  // namespace

std::vector<CommandSpec> add_pause(const GlobalOptions& global) {
    return {
        add_one(global, proto::Command::pause,
                "freeze services' runs (cgroup.freeze): state paused, probes and deadlines held",
                "every service that has a run"),
        add_one(global, proto::Command::resume, "thaw paused services: probes and deadlines go on",
                "every paused service"),
    };
}

}  // namespace pkit::ctl
