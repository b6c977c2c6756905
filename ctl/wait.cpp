// pkitctl wait [--for ready|done|stopped] [--within DURATION] NAME... | --all: blocks
// until every named service has reached the condition (exit 0, then their status
// rows), or one cannot reach it any more or `within` ran out (exit 3, pkitd's message
// naming the service, its state and why). pkitd decides; this only waits for its reply,
// for `within` plus a margin.

#include <chrono>
#include <iostream>
#include <memory>

#include "config/values.hpp"
#include "ctl/client.hpp"
#include "ctl/commands.hpp"

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
    auto within = config::parse_duration(options.within);
    if (!within) {
        throw usage_error("wait: --within: \"" + options.within +
                          "\" is not a duration (\"30s\", \"1m30s\", \"250ms\", 5)");
    }
    proto::Request request{
        .cmd = proto::Command::wait, .services = options.names, .all = options.all};
    request.wait_for = options.condition;
    request.within = std::chrono::duration<double>(*within).count();

    Client client(socket_path(global), timeout_for_work(global, request.within));
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

Subcommand add_wait(CLI::App& app, const GlobalOptions& global) {
    auto options = std::make_shared<WaitOptions>();
    auto* command = app.add_subcommand(
        "wait", "block until services are ready (or done, or stopped); exit 3 if they cannot be");
    command->add_option("NAME", options->names, "the services");
    command->add_flag("--all", options->all, "every service");
    command
        ->add_option("--for", options->condition,
                     "ready (running and ready, or done), done, or stopped")
        ->type_name("CONDITION")
        ->check(CLI::IsMember({"ready", "done", "stopped"}))
        ->capture_default_str();
    command->add_option("--within", options->within, "give up after this long (exit 3)")
        ->type_name("DURATION")
        ->capture_default_str();
    return {command, [&global, options] { return run_wait(global, *options); }};
}

}  // namespace pkit::ctl
