// pkitctl wait [--for ready|done|stopped] [--within DURATION] NAME... | --all: blocks
// until every named service has reached the condition (exit 0, then their status
// rows), or one cannot reach it any more or `within` ran out (exit 3, pkitd's message
// naming the service, its state and why). pkitd decides; this only waits for its reply,
// for `within` plus a margin.

#include <chrono>
#include <iostream>
#include <memory>

#include "ctl/client.hpp"
#include "ctl/commands.hpp"
#include "ctl/common.hpp"
#include "ctl/name_globs.hpp"
#include "ctl/time_text.hpp"

namespace pkit::ctl {
namespace {

struct WaitOptions {
    std::vector<std::string> names;
    bool all = false;
    std::string condition = "ready";
    std::string within = "60s";
};

int run_wait(const GlobalOptions& global, const WaitOptions& options) {
    if (options.names.empty() && !options.all) {
        throw usage_error("wait: name at least one service, or --all");
    }
    if (!options.names.empty() && options.all) {
        throw usage_error("wait: give service names or --all, not both");
    }
    const double within = duration_option("--within", options.within);
    proto::Request request{.cmd = proto::Command::wait,
                           .services = expand_name_globs(global, options.names),
                           .all = options.all};
    request.wait_for = options.condition;
    request.within = within;

    Client client(global, timeout_for_work(global, request.within));
    client.send(request);
    proto::Reply reply = client.read_reply();
    if (reply.kind == proto::Reply::Kind::error &&
        reply.error.code == proto::ErrorCode::not_reached) {
        std::cerr << "pkitctl: not_reached: " << reply.error.message << "\n";
        return k_exit_not_running;
    }
    auto result = result_of(std::move(reply), client.path());
    return print_services(global, result);
}

}  // namespace

CommandSpec add_wait(const GlobalOptions& global) {
    auto options = std::make_shared<WaitOptions>();
    return {.name = "wait",
            .description =
                "block until services are ready (or done, or stopped); exit 3 if "
                "they cannot be",
            .options = {{.names = "NAME",
                         .help = "the services, by name or glob ('worker@*')",
                         .target = &options->names},
                        {.names = "--all", .help = "every service", .target = &options->all},
                        {.names = "--for",
                         .help = "ready (running and ready, or done), done, or stopped",
                         .target = &options->condition,
                         .type_name = "CONDITION",
                         .show_default = true,
                         .one_of = {"ready", "done", "stopped"}},
                        {.names = "--within",
                         .help = "give up after this long (exit 3)",
                         .target = &options->within,
                         .type_name = "DURATION",
                         .show_default = true}},
            .run = [&global, options] { return run_wait(global, *options); }};
}

}  // namespace pkit::ctl
