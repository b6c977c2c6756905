// pkitctl logs NAME... [-n LINES] [--previous] [-f] [--stream stdout|stderr] [-t]
// [--since DURATION]: services' captured output, one line of text a line; several
// services interleaved by time, each line `NAME | text`. With --follow, then their new
// lines across their runs (logs_follow.cpp) until every one will not run again.

#include <climits>
#include <iostream>
#include <memory>

#include "ctl/client.hpp"
#include "ctl/commands.hpp"
#include "ctl/common.hpp"
#include "ctl/log_lines.hpp"
#include "ctl/logs_follow.hpp"
#include "ctl/name_globs.hpp"
#include "ctl/time_text.hpp"

namespace pkit::ctl {
namespace {

struct LogsOptions {
    std::vector<std::string> names;
    int lines = 100;
    bool lines_given = false;
    bool previous = false;
    bool follow = false;
    bool timestamps = false;
    std::string since;   // empty: not given
    std::string stream;  // empty: both
};

// A followed service has ended supervision: it will not run again by itself.
bool ended(const std::string& state) {
    return state == "done" || state == "failed" || state == "stopped";
}

LineSelection selection_of(const LogsOptions& options) {
    LineSelection selection{.stream = options.stream};
    if (!options.since.empty()) {
        selection.since = unix_now() - duration_option("--since", options.since);
    }
    // With --since, every line newer than it, unless -n was given too.
    if (selection.since == std::nullopt || options.lines_given) {
        selection.last = options.lines;
    }
    return selection;
}

// The names with each that pkitd knows as a set of instances (SPEC §13: the protocol's
// logs takes one service or one instance) replaced by its instances, in order. A name
// pkitd does not know is kept: its logs request says so.
std::vector<std::string> expand_instances(const GlobalOptions& global,
                                          const std::vector<std::string>& names) {
    std::vector<std::string> out;
    for (const auto& name : names) {
        if (name.find('@') != std::string::npos) {
            out.push_back(name);
            continue;
        }
        std::vector<proto::ServiceStatus> rows;
        try {
            rows = call_for_rows(global,
                                 proto::Request{.cmd = proto::Command::status, .services = {name}},
                                 timeout_of(global));
        } catch (const CtlError& error) {
            if (error.status() != k_exit_daemon_error) {
                throw;
            }
        }
        if (rows.empty()) {
            out.push_back(name);
        }
        for (const auto& row : rows) {
            out.push_back(row.name);
        }
    }
    return out;
}

int run_logs(const GlobalOptions& global, const LogsOptions& given) {
    LogsOptions options = given;
    options.names = expand_instances(global, expand_name_globs(global, given.names));
    const LineSelection selection = selection_of(options);
    if (options.follow) {
        catch_interrupts();
    }
    const bool several = options.names.size() > 1;
    // A filter applied here (the protocol has none) needs the whole tail to pick from:
    // more lines than any tail holds means all of it.
    const bool filtered = !options.stream.empty() || selection.since.has_value();
    std::vector<Follower> followers;
    std::vector<proto::json> tails;
    for (const auto& name : options.names) {
        auto client = std::make_unique<Client>(global, timeout_of(global));
        client->send(proto::Request{.cmd = proto::Command::logs,
                                    .service = name,
                                    .lines = filtered ? INT_MAX : options.lines,
                                    .previous = options.previous,
                                    .follow = options.follow,
                                    // pkitd reads on through the log file (SPEC §18)
                                    .since = selection.since});
        auto result = result_of(client->read_reply(), client->path());
        result["lines"] = select_lines(result.value("lines", proto::json::array()), selection);
        Follower follower{.name = name, .client = std::move(client)};
        if (result.contains("run") && result["run"].is_number_integer()) {
            follower.shown_run = result["run"].get<int>();
        }
        // Nothing more will come when the old run was asked for or the service ended.
        follower.done =
            !options.follow || options.previous || ended(result.value("state", std::string()));
        tails.push_back(result["lines"]);
        if (global.json) {
            if (several) {
                result["service"] = name;
            }
            print_json(result);
        }
        followers.push_back(std::move(follower));
    }
    FollowFormat format{.json = global.json,
                        .several = several,
                        .stream = options.stream,
                        .line = {.timestamps = options.timestamps, .prefixed = several}};
    for (const auto& name : options.names) {
        format.line.name_width = std::max(format.line.name_width, name.size());
    }
    if (!global.json) {
        for (const auto& [service, line] : interleave(options.names, tails)) {
            std::cout << line_text(service, line, format.line) << "\n";
        }
    }
    std::cout << std::flush;
    follow(followers, format);
    std::cout << std::flush;
    return k_exit_ok;
}

}  // namespace

CommandSpec add_logs(const GlobalOptions& global) {
    auto options = std::make_shared<LogsOptions>();
    return {
        .name = "logs",
        .description = "show services' captured output (several: interleaved by time, NAME | text)",
        .options = {{.names = "NAME",
                     .help = "the services, by name or glob ('web-*')",
                     .target = &options->names,
                     .required = true},
                    {.names = "-n,--lines",
                     .help = "the last LINES lines",
                     .target = &options->lines,
                     .type_name = "LINES",
                     .show_default = true,
                     .range = std::pair{0, 1 << 30},
                     .given = &options->lines_given},
                    {.names = "--previous",
                     .help = "the run before the latest",
                     .target = &options->previous},
                    {.names = "-f,--follow",
                     .help = "then print new lines as they come, across restarts, until "
                             "the services are done, failed or stopped",
                     .target = &options->follow},
                    {.names = "--stream",
                     .help = "only this stream: stdout or stderr",
                     .target = &options->stream,
                     .type_name = "STREAM",
                     .one_of = {"stdout", "stderr"}},
                    {.names = "-t,--timestamps",
                     .help = "each line's time (local, to the millisecond) before its text",
                     .target = &options->timestamps},
                    {.names = "--since",
                     .help = "only lines newer than DURATION ago (30s, 5m, 1h30m); all "
                             "of them unless -n is given too",
                     .target = &options->since,
                     .type_name = "DURATION"}},
        .run = [&global, options] { return run_logs(global, *options); }};
}

}  // namespace pkit::ctl
