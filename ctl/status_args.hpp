#pragma once
// The commonest command lines of `pkitctl status`, read without CLI11: for a
// status of one service, declaring the command line to CLI11 cost more page faults than
// the exchange with pkitd. Any other command line, and any word this reader is not sure
// CLI11 reads alike, goes to CLI11 as before (main.cpp). A pure function of the words.

#include <optional>
#include <string>
#include <vector>

#include "ctl/global_options.hpp"

namespace pkit::ctl {

// What `pkitctl status` runs with (ctl/status.cpp).
struct StatusOptions {
    std::vector<std::string> names;
    bool tree = false;
    bool resources = false;
    std::vector<std::string> states;  // --state, as given (read by CLI11 only)
};

struct StatusArgs {
    GlobalOptions global;
    StatusOptions options;
};

// The options of `args` (argv without the program) when they are exactly
//   [--socket PATH | --socket=PATH | --json]... status [--tree | --resources |
//   --socket PATH | --socket=PATH | --json]... [NAME...]
// each option at most once, PATH and every NAME a non-empty word that does not begin
// with '-' and is not "status" (which CLI11 would take for the command), and nothing
// after the first NAME but NAMEs. nullopt for every other command line (--help,
// --timeout, --color, "--", another command, a typo...): CLI11 reads it, and these
// lines it reads to the same options.
std::optional<StatusArgs> read_status_args(const std::vector<std::string>& args);

// Runs `pkitctl status` (ctl/status.cpp): the exit status, or throws CtlError.
int run_status(const GlobalOptions& global, const StatusOptions& options);

}  // namespace pkit::ctl
