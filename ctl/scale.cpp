// pkitctl scale NAME N (SPEC §13): the instances of a file with `instances` > 1, set
// to N; then the status rows of the instances it now has.

#include <memory>

#include "ctl/commands.hpp"
#include "ctl/common.hpp"

namespace pkit::ctl {
namespace {

struct ScaleOptions {
    std::string name;
    std::string count;
};

// N in decimal digits only, 1 to k_max_scale: CLI11 would read "0x10" as 16 and "1e2"
// as 100, which nobody means as a count of instances.
int parse_count(const std::string& text) {
    bool digits = !text.empty() && text.size() <= 4;
    for (char c : text) {
        digits = digits && c >= '0' && c <= '9';
    }
    int count = digits ? std::stoi(text) : 0;
    if (count < 1 || count > proto::k_max_scale) {
        throw usage_error("scale: N must be a whole number from 1 to " +
                          std::to_string(proto::k_max_scale) + ", in decimal digits: \"" + text +
                          "\"" +
                          (digits && count == 0 ? " (to stop every instance, use stop)" : ""));
    }
    return count;
}

int run_scale(const GlobalOptions& global, const ScaleOptions& options) {
    const int count = parse_count(options.count);
    auto result = call(
        global,
        proto::Request{.cmd = proto::Command::scale, .service = options.name, .instances = count});
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
                         .help = "the number of instances, 1 to 1000 in decimal (to stop them "
                                 "all, use stop)",
                         .target = &options->count,
                         .required = true}},
            .run = [&global, options] { return run_scale(global, *options); }};
}

}  // namespace pkit::ctl
