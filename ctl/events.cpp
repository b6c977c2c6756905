// pkitctl events [--service NAME]... [--type TYPE]...: one line per supervision event,
// until interrupted (exit 0); --json keeps the protocol's objects as they come.

#include <algorithm>
#include <iostream>
#include <memory>

#include "ctl/client.hpp"
#include "ctl/commands.hpp"
#include "ctl/common.hpp"
#include "ctl/event_line.hpp"

namespace pkit::ctl {
namespace {

// The width of the name column: the longest service or group name pkitd knows now
// ("pkitd" at least), so the lines of the usual events line up.
std::size_t subject_width(const proto::json& services) {
    std::size_t width = std::string_view("pkitd").size();
    for (const auto& service : services) {
        width = std::max(width, service.value("name", std::string()).size());
        if (auto group = service.find("group"); group != service.end() && group->is_string()) {
            width = std::max(width, group->get<std::string>().size() + 1);
        }
    }
    return width;
}

int run_events(const GlobalOptions& global, const EventFilter& filter) {
    catch_interrupts();
    std::size_t width = 0;
    if (!global.json || !filter.services.empty()) {
        // What pkitd has now: the width of the names, and whether --service names any.
        auto services = call(global, proto::Request{.cmd = proto::Command::status}).at("services");
        std::vector<std::string> known;
        for (const auto& service : services) {
            known.push_back(service.value("name", std::string()));
        }
        filter.check_services(known);
        width = global.json ? 0 : subject_width(services);
    }
    Client client(global, timeout_of(global));
    client.send(proto::Request{.cmd = proto::Command::events});
    result_of(client.read_reply(), client.path());
    while (auto next = client.read(std::nullopt)) {
        if (next->kind != proto::Reply::Kind::event || !filter.matches(next->body)) {
            continue;
        }
        if (global.json) {
            print_json(next->body);
        } else {
            std::cout << event_line(next->body, width) << std::endl;
        }
    }
    return k_exit_ok;
}

}  // namespace

CommandSpec add_events(const GlobalOptions& global) {
    auto filter = std::make_shared<EventFilter>();
    return {.name = "events",
            .description = "print supervision events until interrupted",
            .options = {{.names = "--service",
                         .help = "only this service's events, by name or glob (repeatable)",
                         .target = &filter->services,
                         .type_name = "NAME",
                         .one_at_a_time = true},
                        {.names = "--type",
                         .help = "only events of this type (repeatable): started, ready, "
                                 "exited, restarting, storm_pause, liveness_kill, health, "
                                 "stopped, gave_up, restarts_exhausted, group_failed, "
                                 "escalated, reload, missed, paused, resumed or log_error",
                         .target = &filter->types,
                         .type_name = "TYPE",
                         .one_at_a_time = true,
                         .one_of = event_types()}},
            .run = [&global, filter] { return run_events(global, *filter); }};
}

}  // namespace pkit::ctl
