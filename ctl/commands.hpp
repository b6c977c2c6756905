#pragma once
// pkitctl's subcommands, one file each. Every add_… function describes its subcommand
// as a CommandSpec: its options, each bound to a member of an options struct of its own
// (held by the runner, never in a static), and the runner main calls when that
// subcommand was given. A runner returns the exit status, or throws CtlError.
//
// Only main.cpp turns these specs into CLI11 options: CLI11 is a large header-only
// library, and one file instantiating it compiles far faster than thirteen.

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "ctl/global_options.hpp"

namespace pkit::ctl {

// One option, flag or positional argument of a subcommand, as CLI11 is told it.
struct OptionSpec {
    // CLI11's name list: "--tree", "-n,--lines", or a positional "NAME".
    std::string names;
    std::string help;
    // Where the value goes; a bool* makes a flag.
    std::variant<bool*, int*, std::string*, std::vector<std::string>*> target;
    std::string type_name;                     // the value's word in --help; empty: CLI11's
    bool required = false;                     // ->required()
    bool show_default = false;                 // ->capture_default_str()
    bool one_at_a_time = false;                // ->allow_extra_args(false): repeat the option
    std::vector<std::string> one_of;           // non-empty: ->check(CLI::IsMember(one_of))
    std::optional<std::pair<int, int>> range;  // ->check(CLI::Range(first, second))
    bool* given = nullptr;  // when set: whether the option was on the command line
};

struct CommandSpec {
    std::string name;
    std::string description;
    std::vector<OptionSpec> options;
    std::function<int()> run;
};

CommandSpec add_status(const GlobalOptions& global);
std::vector<CommandSpec> add_control(const GlobalOptions& global);  // start, stop, restart
CommandSpec add_signal(const GlobalOptions& global);
CommandSpec add_logs(const GlobalOptions& global);
CommandSpec add_events(const GlobalOptions& global);
CommandSpec add_explain(const GlobalOptions& global);
CommandSpec add_reload(const GlobalOptions& global);
CommandSpec add_shutdown(const GlobalOptions& global);
CommandSpec add_check(const GlobalOptions& global);
CommandSpec add_wait(const GlobalOptions& global);
CommandSpec add_health(const GlobalOptions& global);
CommandSpec add_show(const GlobalOptions& global);
CommandSpec add_scale(const GlobalOptions& global);
CommandSpec add_rotate(const GlobalOptions& global);  // SPEC §18
CommandSpec add_upgrade(const GlobalOptions& global);
CommandSpec add_top(const GlobalOptions& global);
std::vector<CommandSpec> add_pause(const GlobalOptions& global);  // pause, resume

}  // namespace pkit::ctl
