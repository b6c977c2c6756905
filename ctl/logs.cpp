// pkitctl logs NAME [-n LINES] [--previous] [-f] [--stream stdout|stderr]: a service's
// captured output, one line of text a line; with --follow, then its new lines across
// its runs, a marker line `--- run 5 (restart 4) ---` between two runs, until the
// service will not run again (done, failed, stopped), or until interrupted or pkitd
// goes away.

#include <climits>
#include <iostream>
#include <memory>
#include <optional>

#include "ctl/client.hpp"
#include "ctl/commands.hpp"

namespace pkit::ctl {
namespace {

struct LogsOptions {
    std::string name;
    int lines = 100;
    bool previous = false;
    bool follow = false;
    std::string stream;  // empty: both
};

// Whether a line passes the --stream filter (applied here: the protocol has none).
bool wanted(const LogsOptions& options, const proto::json& line) {
    return options.stream.empty() || line.value("stream", "") == options.stream;
}

// A followed service has ended supervision: it will not run again by itself.
bool ended(const std::string& state) {
    return state == "done" || state == "failed" || state == "stopped";
}

void print_line(const GlobalOptions& global, const proto::json& line) {
    if (global.json) {
        print_json(line);
    } else {
        std::cout << line.value("text", "") << "\n";
    }
}

int run_logs(const GlobalOptions& global, const LogsOptions& options) {
    if (options.follow) {
        catch_interrupts();
    }
    Client client(socket_path(global), timeout_of(global));
    // With --stream, the last LINES of that stream: the whole tail is asked for (more
    // than any tail holds means all of it) and filtered here.
    client.send(proto::Request{.cmd = proto::Command::logs,
                               .service = options.name,
                               .lines = options.stream.empty() ? options.lines : INT_MAX,
                               .previous = options.previous,
                               .follow = options.follow});
    auto result = result_of(client.read_reply(), client.path());
    proto::json kept = proto::json::array();
    for (auto& line : result.value("lines", proto::json::array())) {
        if (wanted(options, line)) {
            kept.push_back(std::move(line));
        }
    }
    if (kept.size() > static_cast<std::size_t>(options.lines)) {
        kept.erase(kept.begin(), kept.end() - options.lines);
    }
    if (global.json) {
        result["lines"] = std::move(kept);
        print_json(result);
    } else {
        for (const auto& line : kept) {
            print_line(global, line);
        }
    }
    std::cout << std::flush;
    if (!options.follow || options.previous || ended(result.value("state", std::string()))) {
        return k_exit_ok;  // nothing more will come (or the old run was asked for)
    }
    // The run whose lines are shown; a marker goes out when a newer one begins,
    // at its `started` event or its first line, whichever pkitd sent first.
    std::optional<int> shown_run;
    if (result.contains("run") && result["run"].is_number_integer()) {
        shown_run = result["run"].get<int>();
    }
    std::optional<int> restart;  // of the latest `restarting` event
    auto enter_run = [&](int run) {
        if (shown_run && run <= *shown_run) {
            return;
        }
        if (shown_run && !global.json) {
            std::cout << "--- run " << run;
            if (restart) {
                std::cout << " (restart " << *restart << ")";
            }
            std::cout << " ---\n";
        }
        shown_run = run;
        restart.reset();
    };
    while (true) {
        auto next = client.read(std::nullopt);
        if (!next) {
            break;  // interrupted, or pkitd closed the stream (it is shutting down)
        }
        if (next->kind == proto::Reply::Kind::line) {
            if (next->body.contains("run") && next->body["run"].is_number_integer()) {
                enter_run(next->body["run"].get<int>());
            }
            if (wanted(options, next->body)) {
                print_line(global, next->body);
            }
        } else if (next->kind == proto::Reply::Kind::event) {
            const proto::json& event = next->body;
            const std::string type = event.value("type", "");
            if (global.json) {
                print_json(event);
            }
            if (type == "restarting") {
                restart = event.value("restart", 0);
            } else if (type == "started") {
                enter_run(event.value("run", 0));
            } else if (type == "stopped" || type == "gave_up" || type == "restarts_exhausted") {
                break;  // supervision ended: the service will not run again by itself
            }
        }
        std::cout << std::flush;
    }
    std::cout << std::flush;
    return k_exit_ok;
}

}  // namespace

Subcommand add_logs(CLI::App& app, const GlobalOptions& global) {
    auto options = std::make_shared<LogsOptions>();
    auto* command = app.add_subcommand("logs", "show a service's captured output");
    command->add_option("NAME", options->name, "the service")->required();
    command->add_option("-n,--lines", options->lines, "the last LINES lines")
        ->check(CLI::Range(0, 1 << 30))
        ->capture_default_str();
    command->add_flag("--previous", options->previous, "the run before the latest");
    command->add_flag("-f,--follow", options->follow,
                      "then print new lines as they come, across restarts, until the service "
                      "is done, failed or stopped");
    command->add_option("--stream", options->stream, "only this stream")
        ->check(CLI::IsMember({"stdout", "stderr"}));
    return {command, [&global, options] { return run_logs(global, *options); }};
}

}  // namespace pkit::ctl
