// pkitctl show NAME: one screen about one service (show_view.cpp), from three
// requests: status (with resources), explain and logs. --json prints the three
// results as {"status", "explain", "logs"}.

#include <iostream>
#include <memory>

#include "ctl/color.hpp"
#include "ctl/commands.hpp"
#include "ctl/common.hpp"
#include "ctl/show_view.hpp"
#include "ctl/time_text.hpp"

namespace pkit::ctl {
namespace {

constexpr int k_show_lines = 10;

struct ShowOptions {
    std::string name;
};

int run_show(const GlobalOptions& global, const ShowOptions& options) {
    proto::Request status_request{.cmd = proto::Command::status, .services = {options.name}};
    status_request.resources = true;
    auto status = call(global, status_request);  // an unknown name: unknown_service, exit 1
    ShowReplies replies;
    replies.status = status.at("services").at(0);
    replies.explain =
        call(global, proto::Request{.cmd = proto::Command::explain, .service = options.name});
    replies.logs = call(
        global, proto::Request{
                    .cmd = proto::Command::logs, .service = options.name, .lines = k_show_lines});
    if (global.json) {
        print_json(proto::json{
            {"status", replies.status}, {"explain", replies.explain}, {"logs", replies.logs}});
    } else {
        std::cout << render_show(replies, unix_now(), use_color()) << std::flush;
    }
    return k_exit_ok;
}

}  // namespace

CommandSpec add_show(const GlobalOptions& global) {
    auto options = std::make_shared<ShowOptions>();
    return {.name = "show",
            .description =
                "one screen about one service: state, definition, probes, "
                "restarts, last exit, resources, limits, security, explain and its "
                "last 10 lines of output",
            .options = {{.names = "NAME",
                         .help = "the service",
                         .target = &options->name,
                         .type_name = "NAME",
                         .required = true}},
            .run = [&global, options] { return run_show(global, *options); }};
}

}  // namespace pkit::ctl
