// pkitctl scale NAME N (SPEC §13): the instances of a file with `instances` > 1, set
// to N; then the status rows of the instances it now has.

#include <memory>

#include "ctl/commands.hpp"
#include "ctl/common.hpp"

namespace pkit::ctl {
namespace {

struct ScaleOptions {
    std::string name;
    int count = 0;
};

int run_scale(const GlobalOptions& global, const ScaleOptions& options) {
    auto result = call(global, proto::Request{.cmd = proto::Command::scale,
                                              .service = options.name,
                                              .instances = options.count});
    return print_services(global, result);
}

}  // namespace

CommandSpec add_scale(const GlobalOptions& global) {
    auto options = std::make_shared<ScaleOptions>();
    return {.name = "scale",
            .description = "start or stop instances of a service defined with instances > 1",
            .options = {{.names = "NAME",
                         .help = "the service file's name (without @I)",
                         .target = &options->name,
                         .required = true},
                        {.names = "N",
                         .help = "the number of instances, 1 to 1000 (to stop them all, use stop)",
                         .target = &options->count,
                         .required = true,
                         .range = std::pair{1, 1000}}},
            .run = [&global, options] { return run_scale(global, *options); }};
}

}  // namespace pkit::ctl
