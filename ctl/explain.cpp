// pkitctl explain NAME: pkitd's own words on why a service is in its state and what
// happens next.

#include <iostream>
#include <memory>

#include "ctl/commands.hpp"

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

Subcommand add_explain(CLI::App& app, const GlobalOptions& global) {
    auto options = std::make_shared<ExplainOptions>();
    auto* command = app.add_subcommand("explain", "say why a service is in its state");
    command->add_option("NAME", options->name, "the service")->required();
    return {command, [&global, options] { return run_explain(global, *options); }};
}

}  // namespace pkit::ctl
