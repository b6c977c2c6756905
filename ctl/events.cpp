// pkitctl events: one line per supervision event, until interrupted (exit 0).

#include <ctime>
#include <iostream>
#include <memory>

#include "ctl/client.hpp"
#include "ctl/commands.hpp"

namespace pkit::ctl {
namespace {

// "12:03:45.120" in local time.
std::string clock_text(double at) {
    auto seconds = static_cast<std::time_t>(at);
    std::tm local{};
    ::localtime_r(&seconds, &local);
    char text[32];
    auto millis = static_cast<int>((at - static_cast<double>(seconds)) * 1000);
    std::snprintf(text, sizeof text, "%02d:%02d:%02d.%03d", local.tm_hour, local.tm_min,
                  local.tm_sec, std::max(0, std::min(999, millis)));
    return text;
}

// "12:03:45.120  exited  web (backend)  code=1 signal=null duration=0.51"
std::string event_text(const proto::json& event) {
    std::string text = clock_text(event.value("at", 0.0)) + "  " + event.value("type", "?");
    auto service = event.find("service");
    auto group = event.find("group");
    if (service != event.end() && service->is_string()) {
        text += "  " + service->get<std::string>();
        if (group != event.end() && group->is_string()) {
            text += " (" + group->get<std::string>() + ")";
        }
    } else if (group != event.end() && group->is_string()) {
        text += "  group " + group->get<std::string>();
    }
    bool first = true;
    for (const auto& [key, value] : event.items()) {
        if (key == "type" || key == "service" || key == "group" || key == "at") {
            continue;
        }
        text += first ? "  " : " ";
        first = false;
        text += key + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
    }
    return text;
}

int run_events(const GlobalOptions& global) {
    catch_interrupts();
    Client client(socket_path(global), timeout_of(global));
    client.send(proto::Request{.cmd = proto::Command::events});
    result_of(client.read_reply(), client.path());
    while (auto next = client.read(std::nullopt)) {
        if (next->kind != proto::Reply::Kind::event) {
            continue;
        }
        if (global.json) {
            print_json(next->body);
        } else {
            std::cout << event_text(next->body) << std::endl;
        }
    }
    return k_exit_ok;
}

}  // namespace

Subcommand add_events(CLI::App& app, const GlobalOptions& global) {
    auto* command = app.add_subcommand("events", "print supervision events until interrupted");
    return {command, [&global] { return run_events(global); }};
}

}  // namespace pkit::ctl
