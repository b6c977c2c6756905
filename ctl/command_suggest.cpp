#include "ctl/command_suggest.hpp"

#include <algorithm>

#include "config/suggest.hpp"

namespace pkit::ctl {

std::string unknown_command_message(std::string_view word,
                                    const std::vector<std::string>& commands) {
    std::string message = "unknown command \"" + std::string(word) + "\"";
    // A word that starts a command is taken for it first: "stat" means "status", though
    // "start" is one edit closer.
    if (word.size() >= 3) {
        for (const auto& command : commands) {
            if (command.starts_with(word)) {
                return message + "; did you mean \"" + command + "\"?";
            }
        }
    }
    if (auto suggestion = config::detail::did_you_mean(word, commands); !suggestion.empty()) {
        return message + suggestion;
    }
    return message + "; `pkitctl --help` lists the commands";
}

std::optional<std::string> command_word(const std::vector<std::string>& args,
                                        const std::vector<std::string>& valued) {
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (arg == "--") {
            return std::nullopt;  // what follows is not for pkitctl's own parser
        }
        if (arg.starts_with("-")) {
            // "--socket PATH" takes the next word; "--socket=PATH" does not.
            if (std::ranges::find(valued, arg) != valued.end()) {
                ++i;
            }
            continue;
        }
        return arg;
    }
    return std::nullopt;
}

bool needs_every_command(const std::vector<std::string>& args) {
    for (const auto& arg : args) {
        if (arg == "--") {
            return false;
        }
        if (arg.starts_with("--help") || arg.starts_with("--version") ||
            (arg.size() > 1 && arg[0] == '-' && arg[1] != '-' &&
             arg.find('h') != std::string::npos)) {
            return true;
        }
    }
    return false;
}

std::optional<std::string> check_command(const std::vector<std::string>& args,
                                         const std::vector<std::string>& commands,
                                         const std::vector<std::string>& valued) {
    auto word = command_word(args, valued);
    if (!word || std::ranges::find(commands, *word) != commands.end()) {
        return std::nullopt;
    }
    return unknown_command_message(*word, commands);
}

}  // namespace pkit::ctl
