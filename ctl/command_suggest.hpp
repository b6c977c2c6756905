#pragma once
// An unknown command, caught before CLI11 sees it, so the user gets
// `unknown command "stat"; did you mean "status"?` (exit 2) instead of a generic
// "argument was not expected". Pure functions of the command line.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pkit::ctl {

// The message for `word`, which names none of `commands`: with a suggestion, the
// first command that `word` (3 letters or more) begins, else the closest command when
// it is a likely typo; else a pointer to --help.
std::string unknown_command_message(std::string_view word,
                                    const std::vector<std::string>& commands);

// The first word of args (argv without the program) that is not a global option or
// its value: the command, as the user wrote it. nullopt when there is none (or only
// after "--"). `valued` lists the global options that take a value as a separate word.
std::optional<std::string> command_word(const std::vector<std::string>& args,
                                        const std::vector<std::string>& valued);

// Whether CLI11 must be told every subcommand to answer `args`: --help (or -h, alone
// or among combined short flags) lists them, --version stops before any. Any other
// command line parses alike with only its command declared, since pkitctl's commands
// do not nest and one command takes no other's name as a command (main.cpp).
bool needs_every_command(const std::vector<std::string>& args);

// The command word (see command_word), when it is not one of `commands`: the message to print.
// nullopt when the command is known or there is none (CLI11 then says what is missing). `valued`
// lists the global options that take a value as a separate word.
std::optional<std::string> check_command(const std::vector<std::string>& args,
                                         const std::vector<std::string>& commands,
                                         const std::vector<std::string>& valued);

}  // namespace pkit::ctl
