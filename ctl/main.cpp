// pkitctl: steer a running pkitd over its control socket (SPEC §10). This file only
// declares the command line and maps errors to exit statuses; the subcommands live in
// their own files and describe their options as CommandSpecs, which this file alone
// hands to CLI11 (the only ctl file to include it). The commonest `status` lines skip
// CLI11 (ctl/status_args.hpp).

#include <algorithm>
#include <cctype>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include <CLI/CLI.hpp>

#include "ctl/color.hpp"
#include "ctl/command_suggest.hpp"
#include "ctl/commands.hpp"
#include "ctl/status_args.hpp"
#include "ctl/time_text.hpp"
#include "proto/version.hpp"

using namespace pkit::ctl;

namespace {

// CLI11's own names for a value's C++ type: never shown; the option's name is.
bool generic(const std::string& type) {
    return type == "TEXT" || type == "INT" || type == "UINT" || type == "FLOAT" ||
           type == "NUMBER" || type == "BOOLEAN";
}

// --help names option values in words (`--timeout SECONDS`, `--since DURATION`) instead
// of CLI11's types and validator notes (`FLOAT:POSITIVE`, `INT in [0 - 1073741824]`),
// with the default in words after them.
class WordsFormatter : public CLI::Formatter {
public:
    std::string make_option_opts(const CLI::Option* opt) const override {
        if (opt->get_type_size() == 0 || opt->get_type_name().empty()) {
            return "";  // a flag
        }
        std::string out;
        if (opt->nonpositional()) {
            // The word set with type_name(), without the validators' notes after ':'.
            std::string type = opt->get_type_name();
            type = type.substr(0, type.find(':'));
            if (generic(type)) {
                type = opt->get_lnames().empty() ? "VALUE" : opt->get_lnames().front();
                std::ranges::transform(type, type.begin(),
                                       [](unsigned char c) { return std::toupper(c); });
            }
            out += " " + type;
            if (!opt->get_default_str().empty()) {
                out += " (default " + opt->get_default_str() + ")";
            }
        }
        if (opt->get_expected_max() == CLI::detail::expected_max_vector_size) {
            out += " ...";
        }
        if (opt->get_required()) {
            out += " (required)";
        }
        return out;
    }
};

// Declares one option of `spec` on `command` as CLI11 calls go.
CLI::Option* add_option(CLI::App& command, const OptionSpec& spec) {
    CLI::Option* option = std::visit(
        [&](auto* target) -> CLI::Option* {
            if constexpr (std::is_same_v<decltype(target), bool*>) {
                return command.add_flag(spec.names, *target, spec.help);
            } else {
                return command.add_option(spec.names, *target, spec.help);
            }
        },
        spec.target);
    if (!spec.type_name.empty()) {
        option->type_name(spec.type_name);
    }
    if (spec.one_at_a_time) {
        option->allow_extra_args(false);
    }
    if (!spec.one_of.empty()) {
        option->check(CLI::IsMember(spec.one_of));
    }
    if (spec.range) {
        option->check(CLI::Range(spec.range->first, spec.range->second));
    }
    if (spec.required) {
        option->required();
    }
    if (spec.show_default) {
        option->capture_default_str();
    }
    return option;
}

// A subcommand declared on the app, with its options for the `given` flags.
struct Declared {
    CommandSpec spec;
    CLI::App* app = nullptr;
    std::vector<CLI::Option*> options;
};

Declared declare(CLI::App& app, CommandSpec spec) {
    Declared declared{.app = app.add_subcommand(spec.name, spec.description)};
    for (const auto& option : spec.options) {
        declared.options.push_back(add_option(*declared.app, option));
    }
    declared.spec = std::move(spec);
    return declared;
}

// Runs a command: its exit status, or the one its error maps to, after its message.
template <typename Run>
int run_command(const Run& run) {
    try {
        return run();
    } catch (const CtlError& error) {
        std::cerr << "pkitctl: " << error.what() << "\n";
        return error.status();
    } catch (const std::exception& error) {
        // A reply that parsed as JSON but not as the objects it should hold.
        std::cerr << "pkitctl: unexpected reply from pkitd: " << error.what() << "\n";
        return k_exit_unreachable;
    }
}

}  // namespace

int main(int argc, char** argv) {
    // `pkitctl --version` alone: the line CLI11 would print, without building the app
    // (every subcommand) to end it with an exception.
    if (argc == 2 && std::string_view(argv[1]) == "--version") {
        std::cout << pkit::proto::version_line("pkitctl") << "\n";
        return k_exit_ok;
    }
    const std::vector<std::string> args(argv + 1, argv + argc);
    // `pkitctl status` as it is mostly written, without CLI11: declaring the command
    // line costs a status call of one service a fifth of its page faults.
    if (auto status = read_status_args(args)) {
        set_color_mode(parse_color_mode(status->global.color).value_or(ColorMode::automatic));
        return run_command([&] { return run_status(status->global, status->options); });
    }
    CLI::App app{"pkitctl: see and steer the services of a running pkitd", "pkitctl"};
    auto formatter = std::make_shared<WordsFormatter>();
    app.formatter(formatter);  // before the subcommands: they inherit it
    GlobalOptions global;
    app.add_option("--socket", global.socket,
                   "control socket (default: $PKIT_SOCKET, else /run/pkit/pkitd.sock, else "
                   "$XDG_RUNTIME_DIR/pkit/pkitd.sock when only that one exists)")
        ->type_name("PATH");
    app.add_flag("--json", global.json, "print the protocol's result as JSON");
    // Read as text and parsed by the one duration parser of the command line (after
    // parsing, below): CLI11's range check printed its bounds as 310-digit numbers.
    std::string timeout_text = "10s";
    auto* timeout = app.add_option("--timeout", timeout_text,
                                   "how long to wait for a reply: 5, 5s, 1m30s (stop, restart "
                                   "and wait: by default as long as the work takes, plus 10 s)")
                        ->type_name("DURATION")
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

    std::vector<CommandSpec> specs;
    specs.push_back(add_status(global));
    for (auto& command : add_control(global)) {
        specs.push_back(std::move(command));
    }
    for (auto add :
         {add_signal, add_logs, add_events, add_explain, add_reload, add_shutdown, add_check,
          add_wait, add_health, add_show, add_top, add_upgrade, add_scale, add_rotate}) {
        specs.push_back(add(global));
    }
    for (auto& command : add_pause(global)) {
        specs.push_back(std::move(command));
    }

    // An unknown command gets a suggestion (exit 2) before CLI11's generic message.
    std::vector<std::string> names;
    for (const auto& spec : specs) {
        names.push_back(spec.name);
    }
    const std::vector<std::string> valued{"--socket", "--timeout", "--color"};
    if (auto unknown = check_command(args, names, valued)) {
        std::cerr << "pkitctl: " << *unknown << "\n";
        return k_exit_usage;
    }

    // Declaring a subcommand's options costs more than a short command's whole exchange
    // with pkitd, so only the command given is declared, unless the whole
    // app is asked for (--help, --version) or there is no command (CLI11 says so).
    auto word = command_word(args, valued);
    bool one_command = word && !needs_every_command(args);
    std::vector<Declared> commands;
    for (auto& spec : specs) {
        if (!one_command || spec.name == *word) {
            commands.push_back(declare(app, std::move(spec)));
        }
    }

    try {
        app.parse(argc, argv);
    } catch (const CLI::RequiredError& error) {
        // CLI11's "NAME is required" alone does not say of what: the command and its usage.
        const std::vector<CLI::App*> given = app.get_subcommands();
        if (given.empty()) {
            return app.exit(error) == 0 ? k_exit_ok : k_exit_usage;
        }
        const std::string command = "pkitctl " + given.front()->get_name();
        std::cerr << command << ": " << error.what() << "\n"
                  << formatter->make_usage(given.front(), command) << "Run `" << command
                  << " --help` for more information.\n";
        return k_exit_usage;
    } catch (const CLI::ParseError& error) {
        // --help and --version are "errors" with status 0; real usage errors are 2.
        return app.exit(error) == 0 ? k_exit_ok : k_exit_usage;
    }
    global.timeout_given = timeout->count() > 0;
    set_color_mode(parse_color_mode(global.color).value_or(ColorMode::automatic));
    return run_command([&] {
        if (global.timeout_given) {
            global.timeout = duration_option("--timeout", timeout_text, true);
        }
        for (const auto& command : commands) {
            if (command.app->parsed()) {
                for (std::size_t i = 0; i < command.options.size(); ++i) {
                    if (bool* given = command.spec.options[i].given) {
                        *given = command.options[i]->count() > 0;
                    }
                }
                return command.spec.run();
            }
        }
        return static_cast<int>(k_exit_usage);
    });
}
