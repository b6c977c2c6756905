// pkitctl signal [--group] NAME... SIGNAL: send a signal to services' main processes
// (or, with --group, to their whole process groups).

#include <iostream>
#include <memory>

#include "config/values.hpp"
#include "ctl/commands.hpp"
#include "ctl/common.hpp"
#include "ctl/name_globs.hpp"

namespace pkit::ctl {
namespace {

struct SignalOptions {
    std::vector<std::string> arguments;  // NAME... SIGNAL
    bool group = false;
};

int run_signal(const GlobalOptions& global, const SignalOptions& options) {
    if (options.arguments.size() < 2) {
        throw usage_error(
            "signal: name the services, then the signal: pkitctl signal [--group] "
            "NAME... SIGNAL");
    }
    const std::string& signal = options.arguments.back();
    if (!config::parse_signal(signal)) {
        throw usage_error("signal: unknown signal \"" + signal + "\"" +
                          config::signal_suggestion(signal) +
                          " (a name such as TERM, SIGHUP or RTMIN+3, or a number from 1 to 64)");
    }
    proto::Request request{
        .cmd = proto::Command::signal,
        .services =
            expand_name_globs(global, {options.arguments.begin(), options.arguments.end() - 1}),
        .signal = signal,
        .group = options.group,
    };
    auto result = call(global, request);
    return print_services(global, result);
}

}  // namespace

CommandSpec add_signal(const GlobalOptions& global) {
    auto options = std::make_shared<SignalOptions>();
    return {.name = "signal",
            .description = "send a signal (HUP, SIGUSR1, 10...)",
            .options = {{.names = "--group",
                         .help = "signal the whole process group",
                         .target = &options->group},
                        {.names = "ARGS",
                         .help = "the services (names or globs), then the signal",
                         .target = &options->arguments,
                         .type_name = "NAME... SIGNAL"}},
            .run = [&global, options] { return run_signal(global, *options); }};
}

}  // namespace pkit::ctl
