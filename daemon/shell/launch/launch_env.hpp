#pragma once
// The parts of a launch that happen in the parent before fork and may allocate: the
// run's environment and the lookup of argv[0]. Separate from launcher.cpp so that the
// file holding the post-fork child code stays short enough to audit for
// async-signal-safety.

#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/program_lookup.hpp"
#include "daemon/shell/launch/launcher.hpp"

namespace pkit::shell {

// The PATH used for the lookup when the service's environment has none (SPEC §2; the
// one --check looks in too).
inline constexpr std::string_view k_default_path = config::k_default_path;

// Builds a LaunchFailure with the message "KIND: WHAT: REASON".
LaunchFailure make_failure(config::LaunchError kind, std::string_view what,
                           std::string_view reason);

// Parses dotenv text: KEY=VALUE lines, blank lines and # comments skipped, an optional
// `export ` prefix, values optionally in single quotes (literal) or double quotes (\n,
// \t, \", \\ escapes); an unquoted value ends at " #" and is trimmed. Returns the pairs in
// file order, or "LINE: reason" for the first line that is not KEY=VALUE, so a typo in
// an env file fails the launch rather than silently dropping a variable.
std::expected<std::vector<std::pair<std::string, std::string>>, std::string> parse_dotenv(
    std::string_view text);

// The passwd entry of a service's `user`, for HOME, USER, LOGNAME and SHELL.
struct Account {
    std::string name;
    std::string home;
    std::string shell;
};

// The run's environment as "KEY=VALUE" strings, in SPEC §13's order: pkitd's environ
// unless clear_env; with `account`, HOME, USER, LOGNAME and SHELL; request.daemon's
// env_files (read now, at the run's start) then its env; the service's env_files then
// env; PKIT_SERVICE, PKIT_INSTANCE and PKIT_RUN; then extra_env. A later definition of a
// key replaces an earlier one in place. Variables in env_file paths expand from the
// environment built up to them; in env values, from the environment as it was before
// that env table. Fails with bad_env_file or undefined_variable.
std::expected<std::vector<std::string>, LaunchFailure> build_environment(
    const LaunchRequest& request, const Account* account);

// `text` with its variables expanded from `env` ("KEY=VALUE" strings); `what` names the
// place ("command[2]", "cwd") in an undefined_variable failure.
std::expected<std::string, LaunchFailure> expand_in(std::string_view text,
                                                    const std::vector<std::string>& env,
                                                    std::string_view what);

// The path to execve for argv[0] `name`: `name` itself when it contains '/', else the
// first executable regular file `DIR/name` for DIR in the PATH of `env` (or
// k_default_path). A match that exists but is not executable is returned when nothing
// better is found, so exec reports permission_denied. Relative PATH entries are checked
// against `cwd`, where the child will be when it execs. Fails with not_found.
std::expected<std::string, LaunchFailure> resolve_program(const std::string& name,
                                                          const std::vector<std::string>& env,
                                                          const std::optional<std::string>& cwd);

}  // namespace pkit::shell
