// pkitctl: steer a running pkitd over its control socket (SPEC §10). This file only
// declares the command line and maps errors to exit statuses; the subcommands live in
// their own files.

#include <iostream>

#include "ctl/color.hpp"
#include "ctl/command_suggest.hpp"
#include "ctl/commands.hpp"
#include "ctl/help_format.hpp"
#include "proto/version.hpp"

using namespace pkit::ctl;

int main(int argc, char** argv) {
    CLI::App app{"pkitctl: see and steer the services of a running pkitd", "pkitctl"};
    app.formatter(words_formatter());  // before the subcommands: they inherit it
    GlobalOptions global;
    app.add_option("--socket", global.socket,
                   "control socket (default: $PKIT_SOCKET, else /run/pkit/pkitd.sock, else "
                   "$XDG_RUNTIME_DIR/pkit/pkitd.sock when only that one exists)")
        ->type_name("PATH");
    app.add_flag("--json", global.json, "print the protocol's result as JSON");
    auto* timeout = app.add_option("--timeout", global.timeout,
                                   "seconds to wait for a reply (stop, restart and wait: by "
                                   "default as long as the work takes, plus 10 s)")
                        ->type_name("SECONDS")
                        ->check(CLI::PositiveNumber)
                        ->capture_default_str();
    app.add_option(
           "--color", global.color,
           "colours: auto (on a terminal, without NO_COLOR, TERM not dumb), always or never")
        ->type_name("WHEN")
        ->check(CLI::IsMember({"auto", "always", "never"}))
        ->capture_default_str();
    app.set_version_flag("--version", pkit::proto::version_line("pkitctl"));
    app.require_subcommand(1);
    app.fallthrough();  // global options are also accepted after the command

    std::vector<Subcommand> commands{add_status(app, global)};
    for (auto& command : add_control(app, global)) {
        commands.push_back(std::move(command));
    }
    for (auto add : {add_signal, add_logs, add_events, add_explain, add_reload, add_shutdown,
                     add_check, add_wait, add_health, add_show}) {
        commands.push_back(add(app, global));
    }

    // An unknown command gets a suggestion (exit 2) before CLI11's generic message.
    std::vector<std::string> names;
    for (const auto& command : commands) {
        names.push_back(command.app->get_name());
    }
    if (auto unknown = check_command(std::vector<std::string>(argv + 1, argv + argc), names,
                                     {"--socket", "--timeout", "--color"})) {
        std::cerr << "pkitctl: " << *unknown << "\n";
        return k_exit_usage;
    }

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& error) {
        // --help and --version are "errors" with status 0; real usage errors are 2.
        return app.exit(error) == 0 ? k_exit_ok : k_exit_usage;
    }
    global.timeout_given = timeout->count() > 0;
    set_color_mode(parse_color_mode(global.color).value_or(ColorMode::automatic));
    try {
        for (const auto& command : commands) {
            if (command.app->parsed()) {
                return command.run();
            }
        }
        return k_exit_usage;
    } catch (const CtlError& error) {
        std::cerr << "pkitctl: " << error.what() << "\n";
        return error.status();
    } catch (const std::exception& error) {
        // A reply that parsed as JSON but not as the objects it should hold.
        std::cerr << "pkitctl: unexpected reply from pkitd: " << error.what() << "\n";
        return k_exit_unreachable;
    }
}
