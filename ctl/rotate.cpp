// pkitctl rotate [NAME...] (SPEC §18): pkitd rotates each named service's log file
// (every one's without names) after the lines it has already read: PATH becomes
// PATH.1, and a new PATH is opened. A named service without a log file is an error.

#include <algorithm>
#include <iostream>
#include <memory>

#include "ctl/commands.hpp"
#include "ctl/common.hpp"
#include "ctl/name_globs.hpp"

namespace pkit::ctl {
namespace {

struct RotateOptions {
    std::vector<std::string> names;
};

// Whether `rotated` holds `name` or, for a file with instances, one of its NAME@I.
bool covers(const std::vector<std::string>& rotated, const std::string& name) {
    return std::ranges::any_of(rotated, [&](const std::string& r) {
        return r == name || (name.find('@') == std::string::npos && r.starts_with(name + "@"));
    });
}

int run_rotate(const GlobalOptions& global, const RotateOptions& options) {
    std::vector<std::string> names = expand_name_globs(global, options.names);
    auto result = call(global, proto::Request{.cmd = proto::Command::rotate, .services = names});
    std::vector<std::string> rotated;
    if (auto it = result.find("rotated"); it != result.end() && it->is_array()) {
        for (const auto& name : *it) {
            if (name.is_string()) {
                rotated.push_back(name.get<std::string>());
            }
        }
    }
    if (global.json) {
        print_json(result);
    } else {
        for (const std::string& name : rotated) {
            std::cout << name << ": log file rotated\n";
        }
        if (rotated.empty() && names.empty()) {
            std::cout << "no service has a log file\n";
        }
    }
    int status = k_exit_ok;
    for (const std::string& name : names) {
        if (!covers(rotated, name)) {
            std::cerr << "pkitctl: " << name << " has no log file ([output] file, SPEC §18)\n";
            status = k_exit_daemon_error;
        }
    }
    return status;
}

}  // namespace

CommandSpec add_rotate(const GlobalOptions& global) {
    auto options = std::make_shared<RotateOptions>();
    return {.name = "rotate",
            .description = "rotate log files now: PATH to PATH.1, a new PATH",
            .options = {{.names = "NAME",
                         .help = "services or instances (globs: 'web*'); none: every log file",
                         .target = &options->names}},
            .run = [&global, options] { return run_rotate(global, *options); }};
}

}  // namespace pkit::ctl
