// pkitctl explain NAME: pkitd's own words on why a service is in its state and what
// happens next.

#include <iostream>
#include <memory>

#include "ctl/commands.hpp"
#include "ctl/common.hpp"

namespace pkit::ctl {
namespace {

struct ExplainOptions {
    std::string name;
};

int run_explain(const GlobalOptions& global, const ExplainOptions& options) {
    auto result =
        call(global, proto::Request{.cmd = proto::Command::explain, .service = options.name});
    if (global.json) {
        print_json(result);
    } else {
        std::cout << result.at("text").get<std::string>() << "\n";
    }
    return k_exit_ok;
}

}  // namespace

CommandSpec add_explain(const GlobalOptions& global) {
    auto options = std::make_shared<ExplainOptions>();
    return {.name = "explain",
            .description = "say why a service is in its state",
            .options = {{.names = "NAME",
                         .help = "the service",
                         .target = &options->name,
                         .required = true}},
            .run = [&global, options] { return run_explain(global, *options); }};
}

}  // namespace pkit::ctl
