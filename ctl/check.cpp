// pkitctl check [DIR]: validate a configuration tree offline, as `pkitd --check` does,
// without a running pkitd. Every problem goes to stderr as FILE:LINE:COLUMN: error: ...

#include <cstdlib>
#include <iostream>
#include <memory>

#include "config/loader.hpp"
#include "ctl/commands.hpp"
#include "ctl/common.hpp"

namespace pkit::ctl {
namespace {

struct CheckOptions {
    std::string dir;  // empty: $PKIT_CONFIG, else /etc/pkit
};

std::string config_dir(const CheckOptions& options) {
    if (!options.dir.empty()) {
        return options.dir;
    }
    if (const char* env = std::getenv("PKIT_CONFIG"); env != nullptr && *env != '\0') {
        return env;
    }
    return "/etc/pkit";
}

int run_check(const GlobalOptions& global, const CheckOptions& options) {
    auto dir = config_dir(options);
    auto load_options = config::default_load_options();
    std::vector<config::Diagnostic> warnings;
    load_options.warnings = &warnings;
    auto tree = config::load_tree(dir, load_options);
    for (const auto& warning : warnings) {
        std::cerr << warning.to_string() << "\n";
    }
    if (!tree) {
        proto::json diagnostics = proto::json::array();
        for (const auto& diagnostic : tree.error()) {
            std::cerr << diagnostic.to_string() << "\n";
            diagnostics.push_back({{"file", diagnostic.file},
                                   {"line", diagnostic.line},
                                   {"column", diagnostic.column},
                                   {"message", diagnostic.message}});
        }
        if (global.json) {
            print_json({{"valid", false}, {"dir", dir}, {"errors", diagnostics}});
        }
        return k_exit_usage;
    }
    auto services = tree->services.size();
    auto groups = tree->daemon.groups.size();
    if (global.json) {
        print_json({{"valid", true},
                    {"dir", dir},
                    {"services", services},
                    {"groups", groups},
                    {"errors", proto::json::array()}});
    } else {
        std::cout << dir << ": valid: " << services << (services == 1 ? " service" : " services")
                  << ", " << groups << (groups == 1 ? " group" : " groups") << "\n";
    }
    return k_exit_ok;
}

}  // namespace

CommandSpec add_check(const GlobalOptions& global) {
    auto options = std::make_shared<CheckOptions>();
    return {.name = "check",
            .description = "validate a configuration tree offline",
            .options = {{.names = "DIR",
                         .help = "the tree (default: $PKIT_CONFIG, else /etc/pkit)",
                         .target = &options->dir}},
            .run = [&global, options] { return run_check(global, *options); }};
}

}  // namespace pkit::ctl
