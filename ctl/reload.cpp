// pkitctl reload: pkitd re-reads its configuration. An invalid one changes nothing and
// comes back as an invalid_config error (exit 1) listing the problems.

#include <iostream>

#include "ctl/commands.hpp"
#include "ctl/common.hpp"

namespace pkit::ctl {
namespace {

std::string joined(const std::vector<std::string>& names) {
    std::string text;
    for (const auto& name : names) {
        text += (text.empty() ? "" : ", ") + name;
    }
    return text;
}

int run_reload(const GlobalOptions& global) {
    auto result = call(global, proto::Request{.cmd = proto::Command::reload});
    if (global.json) {
        print_json(result);
        return k_exit_ok;
    }
    auto reload = result.get<proto::ReloadResult>();
    std::cout << "reloaded";
    for (const auto& [label, names] :
         {std::pair{"added", &reload.added}, std::pair{"removed", &reload.removed},
          std::pair{"changed", &reload.changed}}) {
        if (!names->empty()) {
            std::cout << "; " << label << ": " << joined(*names);
        }
    }
    std::cout << "; " << reload.unchanged << " unchanged\n";
    return k_exit_ok;
}

}  // namespace

CommandSpec add_reload(const GlobalOptions& global) {
    return {.name = "reload", .description = "re-read the configuration", .run = [&global] {
                return run_reload(global);
            }};
}

}  // namespace pkit::ctl
