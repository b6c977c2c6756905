// pkitctl status [--tree] [--resources] [--state STATE[,STATE]...] [NAME|GLOB...]: the
// status table (or tree, or the protocol's result with --json). Exit 3 when services
// were named on the command line and one listed is not running, so `pkitctl status
// web && ...` works as a readiness check. Globs and --state are applied here, to the
// rows of every service (ctl/status_filter.hpp); plain names alone are asked of pkitd.

#include <sys/ioctl.h>
#include <unistd.h>

#include <iostream>
#include <memory>

#include "ctl/commands.hpp"
#include "ctl/common.hpp"
#include "ctl/render.hpp"
#include "ctl/status_args.hpp"
#include "ctl/status_filter.hpp"

namespace pkit::ctl {
namespace {

// A table longer than this ends with a summary line on a terminal (SPEC §17).
constexpr std::size_t k_summary_rows = 10;

// Standard output's terminal columns; nullopt when it is not a terminal.
std::optional<std::size_t> terminal_columns() {
    if (::isatty(STDOUT_FILENO) == 0) {
        return std::nullopt;
    }
    struct winsize size {};
    if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) {
        return size.ws_col;
    }
    return 0;  // a terminal of unknown width: nothing is cut
}

}  // namespace

int run_status(const GlobalOptions& global, const StatusOptions& options) {
    const std::vector<std::string> states = split_states(options.states);
    const bool filtered = !states.empty() || std::ranges::any_of(options.names, [](const auto& n) {
        return is_pattern(n);
    });
    proto::Request request{.cmd = proto::Command::status};
    if (!filtered) {
        request.services = options.names;  // pkitd says which is unknown, and suggests
    }
    request.resources = options.resources;
    std::vector<proto::ServiceStatus> services;
    if (global.json && !filtered && options.names.empty()) {
        // Every row as pkitd wrote it: no tree of ten thousand services built only to be
        // written out again (three quarters of the time at that size).
        print_result_text(global, request);
    } else if (global.json) {
        // The protocol's whole result, as it is (its services selected when filtered).
        auto result = call(global, request);
        if (filtered) {
            auto& rows = result.at("services");
            std::vector<std::string> texts;
            texts.reserve(rows.size() * 2);
            for (const auto& row : rows) {
                texts.push_back(row.value("name", std::string()));
                texts.push_back(row.value("state", std::string()));
            }
            std::vector<NameState> view;
            for (std::size_t i = 0; i < rows.size(); ++i) {
                view.push_back({texts[2 * i], texts[2 * i + 1]});
            }
            proto::json kept = proto::json::array();
            for (std::size_t i : select_rows(view, options.names, states)) {
                kept.push_back(std::move(rows[i]));
            }
            rows = std::move(kept);
        }
        if (!options.names.empty()) {
            services = result.at("services").get<std::vector<proto::ServiceStatus>>();
        }
        print_json(result);
    } else {
        // Only what the table and the tree show (the state among it, for exit 3), read
        // straight into rows: a thousand services' reply is half as long.
        request.fields = k_rendered_fields;
        services = call_for_rows(global, request, timeout_of(global));
        if (filtered) {
            const std::vector<NameState> view = name_states(services);
            std::vector<proto::ServiceStatus> kept;
            for (std::size_t i : select_rows(view, options.names, states)) {
                kept.push_back(std::move(services[i]));
            }
            services = std::move(kept);
        }
        const auto columns = terminal_columns();
        const std::size_t width = columns.value_or(0);
        std::cout << (options.tree ? render_tree(services, use_color(), width)
                                   : render_table(services, use_color(), width));
        if (columns && services.size() > k_summary_rows) {
            std::cout << summary_line(name_states(services)) << "\n";
        }
    }
    if (!options.names.empty()) {
        for (const auto& status : services) {
            if (status.state != "running") {
                return k_exit_not_running;
            }
        }
    }
    return k_exit_ok;
}

CommandSpec add_status(const GlobalOptions& global) {
    auto options = std::make_shared<StatusOptions>();
    return {.name = "status",
            .description = "show the services' state",
            .options = {{.names = "--tree",
                         .help = "draw groups and their members",
                         .target = &options->tree},
                        {.names = "--resources",
                         .help = "add PROCS, CPU (seconds) and MEM columns: each run's "
                                 "process group",
                         .target = &options->resources},
                        {.names = "--state",
                         .help = "only services in these states (running,backoff): waiting, "
                                 "starting, running, stopping, backoff, storm_pause, stopped, "
                                 "done, failed, scheduled or paused; repeatable",
                         .target = &options->states,
                         .type_name = "STATE[,STATE]...",
                         .one_at_a_time = true},
                        {.names = "NAME",
                         .help = "only these services, by name or glob ('web-*', 'api@*'); "
                                 "exit 3 if one is not running",
                         .target = &options->names}},
            .run = [&global, options] { return run_status(global, *options); }};
}

}  // namespace pkit::ctl
