// pkitctl shutdown: pkitd stops every service in reverse dependency order and exits.
// The reply comes before the shutdown, so this returns at once.

#include <iostream>

#include "ctl/commands.hpp"
#include "ctl/common.hpp"

namespace pkit::ctl {
namespace {

int run_shutdown(const GlobalOptions& global) {
    auto result = call(global, proto::Request{.cmd = proto::Command::shutdown});
    if (global.json) {
        print_json(result);
    } else {
        std::cout << "pkitd is shutting down\n";
    }
    return k_exit_ok;
}

}  // namespace

CommandSpec add_shutdown(const GlobalOptions& global) {
    return {.name = "shutdown", .description = "stop every service, then pkitd", .run = [&global] {
                return run_shutdown(global);
            }};
}

}  // namespace pkit::ctl
