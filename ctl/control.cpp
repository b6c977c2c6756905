// pkitctl start|stop|restart NAME... | --all: operator commands, then the resulting
// status rows. pkitd replies to stop and restart once the runs have ended (or
// restarted), so the rows show the outcome, not the request; --no-block asks for the
// reply as soon as pkitd has accepted the request. restart --rolling restarts the
// services one at a time (SPEC §14); its reply comes once the last one is ready.
//
// How long to wait for that reply (unless --timeout is given): as long as pkitd may
// take. The default --timeout (10 s) first; only if no reply has come by then does a
// `status` of the named services, on a second connection, tell their stop.timeout and
// [ready] timeout, and the wait goes on until, from the request: for stop the longest
// stop.timeout, for restart the longest stop.timeout twice (the old run, then a new run
// that misses its readiness deadline) plus the readiness timeout; both plus 10 s. (The
// status is not asked first: a second round trip made every stop slower.)

#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>

#include "ctl/client.hpp"
#include "ctl/commands.hpp"
#include "ctl/common.hpp"
#include "ctl/name_globs.hpp"

namespace pkit::ctl {
namespace {

struct ControlOptions {
    proto::Command command = proto::Command::start;
    std::vector<std::string> names;
    bool all = false;
    bool no_block = false;
    bool rolling = false;  // restart: one at a time (SPEC §14)
};

// The seconds pkitd may work on `command` for these services before it replies: the
// longest of them, or their sum for a rolling restart, which takes them in turn.
double work_seconds(proto::Command command, const std::vector<proto::ServiceStatus>& rows,
                    bool rolling) {
    double longest = 0;
    double total = 0;
    for (const auto& row : rows) {
        double work = row.stop_timeout;
        if (command == proto::Command::restart) {
            work = 2 * row.stop_timeout + row.ready_timeout.value_or(0.0);
        }
        longest = std::max(longest, work);
        total += work;
    }
    return rolling ? total : longest;
}

// The wait for pkitd's work on these services (see the top of the file).
std::chrono::milliseconds work_timeout(const GlobalOptions& global, const ControlOptions& options) {
    proto::Request status{.cmd = proto::Command::status};
    if (!options.all) {
        status.services = options.names;
    }
    auto rows = services_of(call(global, status));
    return timeout_for_work(global, work_seconds(options.command, rows, options.rolling));
}

int run_control(const GlobalOptions& global, const ControlOptions& given) {
    require_names_or_all(std::string(proto::to_string(given.command)), given.names, given.all);
    ControlOptions options = given;
    options.names = expand_name_globs(global, given.names);
    proto::Request request{.cmd = options.command, .services = options.names, .all = options.all};
    request.no_block = options.no_block;
    request.rolling = options.rolling;
    const bool waits =
        options.command == proto::Command::stop || options.command == proto::Command::restart;
    if (global.timeout_given || !waits || options.no_block) {
        return print_services(global, call(global, request, timeout_of(global)));
    }
    Client client(global, timeout_of(global));
    const auto sent = std::chrono::steady_clock::now();
    client.send(request);
    if (!client.readable_before(sent + timeout_of(global))) {
        const auto limit = work_timeout(global, options);
        client.set_reply_deadline(sent + limit, limit);
    }
    return print_services(global, result_of(client.read_reply(), client.path()));
}

CommandSpec add_one(const GlobalOptions& global, proto::Command command,
                    const std::string& description) {
    auto options = std::make_shared<ControlOptions>();
    options->command = command;
    CommandSpec spec{
        .name = std::string(proto::to_string(command)),
        .description = description,
        .options = {{.names = "NAME",
                     .help = "the services, by name or glob ('worker@*')",
                     .target = &options->names},
                    {.names = "--all", .help = "every service", .target = &options->all}},
        .run = [&global, options] { return run_control(global, *options); }};
    if (command != proto::Command::start) {
        spec.options.push_back(
            {.names = "--no-block",
             .help = "return once pkitd accepted the request, before the runs have ended",
             .target = &options->no_block});
    }
    if (command == proto::Command::restart) {
        spec.options.push_back(
            {.names = "--rolling",
             .help = "one service (or instance) at a time, each ready before the next; a "
                     "failure stops the roll",
             .target = &options->rolling});
    }
    return spec;
}

}  // namespace

std::vector<CommandSpec> add_control(const GlobalOptions& global) {
    return {
        add_one(global, proto::Command::start, "start stopped services"),
        add_one(global, proto::Command::stop, "stop services (they stay stopped until started)"),
        add_one(global, proto::Command::restart, "restart services with fresh runs"),
    };
}

}  // namespace pkit::ctl
