// pkitctl reload: pkitd re-reads its configuration. An invalid one changes nothing and
// comes back as an invalid_config error (exit 1) listing the problems. The reply waits
// for the start_first replacements the reload began (SPEC §21): a failed one is named
// with its reason and exits 1, the reload itself staying applied; --no-wait returns at
// once. --dry-run shows what a reload would do (reload_preview.cpp).
//
// How long to wait for that reply (unless --timeout is given): a replacement is through
// within its [ready] timeout, so the longest of the services' (a `status` first tells
// them), plus the default --timeout for the read itself.

#include <algorithm>
#include <iostream>
#include <memory>

#include "ctl/commands.hpp"
#include "ctl/common.hpp"

namespace pkit::ctl {

int run_reload_preview(const GlobalOptions& global);  // reload_preview.cpp

namespace {

struct ReloadOptions {
    bool dry_run = false;
    bool no_wait = false;
};

std::string joined(const std::vector<std::string>& names) {
    std::string text;
    for (const auto& name : names) {
        text += (text.empty() ? "" : ", ") + name;
    }
    return text;
}

std::chrono::milliseconds reply_timeout(const GlobalOptions& global, const ReloadOptions& options) {
    if (global.timeout_given || options.no_wait) {
        return timeout_of(global);
    }
    proto::Request status{.cmd = proto::Command::status};
    status.fields = {"state", "ready_timeout"};  // a row has its name and state
    double longest = 0;
    for (const auto& row : call_for_rows(global, status, timeout_of(global))) {
        longest = std::max(longest, row.ready_timeout.value_or(0.0));
    }
    return timeout_for_work(global, longest);
}

int run_reload(const GlobalOptions& global, const ReloadOptions& options) {
    if (options.dry_run) {
        return run_reload_preview(global);
    }
    proto::Request request{.cmd = proto::Command::reload};
    request.no_block = options.no_wait;
    auto result = call(global, request, reply_timeout(global, options));
    auto reload = result.get<proto::ReloadResult>();
    for (const auto& warning : reload.warnings) {
        std::cerr << warning << "\n";
    }
    int status = k_exit_ok;
    for (const auto& replacement : reload.replacements) {
        if (replacement.ok == false) {
            status = k_exit_daemon_error;
        }
    }
    if (global.json) {
        print_json(result);
    } else {
        std::cout << "reloaded";
        for (const auto& [label, names] :
             {std::pair{"added", &reload.added}, std::pair{"removed", &reload.removed},
              std::pair{"changed", &reload.changed}}) {
            if (!names->empty()) {
                std::cout << "; " << label << ": " << joined(*names);
            }
        }
        std::cout << "; " << reload.unchanged << " unchanged\n" << std::flush;
    }
    for (const auto& replacement : reload.replacements) {
        if (replacement.ok == false) {
            std::cerr << "pkitctl: " << replacement.service
                      << ": its new run failed: " << replacement.reason.value_or("unknown")
                      << " (the reload stays applied)\n";
        }
    }
    return status;
}

}  // namespace

CommandSpec add_reload(const GlobalOptions& global) {
    auto options = std::make_shared<ReloadOptions>();
    return {.name = "reload",
            .description = "re-read the configuration",
            .options = {{.names = "--dry-run",
                         .help = "show what a reload would add, remove and change (each "
                                 "changed service's keys, and whether its run would be "
                                 "restarted), changing nothing",
                         .target = &options->dry_run},
                        {.names = "--no-wait",
                         .help = "return once the reload is applied, before the start_first "
                                 "replacements it began are ready",
                         .target = &options->no_wait}},
            .run = [&global, options] { return run_reload(global, *options); }};
}

}  // namespace pkit::ctl
