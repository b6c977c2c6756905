// pkitctl signal [--group] NAME... SIGNAL: send a signal to services' main processes
// (or, with --group, to their whole process groups).

#include <iostream>
#include <memory>

#include "config/values.hpp"
#include "ctl/commands.hpp"

namespace pkit::ctl {
namespace {

struct SignalOptions {
    std::vector<std::string> arguments;  // NAME... SIGNAL
    bool group = false;
};

int run_signal(const GlobalOptions& global, const SignalOptions& options) {
    if (options.arguments.size() < 2) {
        throw usage_error("signal: expected NAME... SIGNAL");
    }
    const std::string& signal = options.arguments.back();
    if (!config::parse_signal(signal)) {
        throw usage_error("signal: unknown signal \"" + signal + "\"");
    }
    proto::Request request{
        .cmd = proto::Command::signal,
        .services = {options.arguments.begin(), options.arguments.end() - 1},
        .signal = signal,
        .group = options.group,
    };
    auto result = call(global, request);
    return print_services(global, result);
}

}  // namespace

Subcommand add_signal(CLI::App& app, const GlobalOptions& global) {
    auto options = std::make_shared<SignalOptions>();
    auto* command = app.add_subcommand("signal", "send a signal (HUP, SIGUSR1, 10...)");
    command->add_flag("--group", options->group, "signal the whole process group");
    command->add_option("ARGS", options->arguments, "the services, then the signal")
        ->type_name("NAME... SIGNAL")
        ->required();
    return {command, [&global, options] { return run_signal(global, *options); }};
}

}  // namespace pkit::ctl
