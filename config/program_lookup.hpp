#pragma once
// --check's look for each service's program (SPEC §21): argv[0] of `command` searched
// for as a run's launch would search for it, so that `command = ["/usr/bin/pyhton3"]`
// is a warning at --check instead of a run that fails not_found and is retried for
// ever. A warning only: the program may be installed after the check, or the check
// may run where the services do not.

#include <string>
#include <string_view>
#include <vector>

#include "config/loader.hpp"

namespace pkit::config {

// The PATH a run's program is looked up in when its environment has none (SPEC §2).
inline constexpr std::string_view k_default_path = "/usr/local/bin:/usr/bin:/bin";

}  // namespace pkit::config

namespace pkit::config::detail {

struct ServiceDraft;

// A warning at argv[0] of the service's `command` into `out` when the launch would not
// find it: an absolute or relative path (relative: against `cwd`, else the current
// directory) that is missing, a directory or not executable; a bare name that no
// directory of PATH holds as an executable file. PATH is the one the run would get:
// the service's `env`, else pkitd.toml's `env`, else pkitd's own environment (unless
// clear_env), else k_default_path. `${VAR}` in argv[0], PATH and cwd is expanded from
// the same sources. Nothing is said when the answer depends on what only a run knows:
// an env_file (of the service or pkitd.toml) with a program that is not an absolute
// path written out, a variable no source defines (warn_undefined_variables says so),
// or HOME, USER, LOGNAME or SHELL of a service with a `user`. The second and later
// instances of a file are skipped: the first speaks for them. Reads the file system.
void warn_missing_program(const ServiceDraft& service, const DaemonSpec& daemon,
                          std::vector<Diagnostic>& out);

}  // namespace pkit::config::detail
