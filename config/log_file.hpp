#pragma once
// SPEC §18: the log file a service writes, resolved from its [output] keys and
// pkitd.toml's [output]. Pure (the environment comes in as a lookup), so the loader
// checks with it what pkitd will open, and pkitd opens what the loader checked.

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>

#include "config/model.hpp"
#include "config/variables.hpp"

namespace pkit::config {

// One service's log file, every key decided.
struct LogFileSpec {
    std::string path;  // absolute when the configuration directory given was
    std::uint64_t max_size = 10 * 1024 * 1024;
    int keep = 5;
    LogFormat format = LogFormat::text;
    bool operator==(const LogFileSpec&) const = default;
};

// The log file of `spec`: its own `file` (variables expanded by `lookup`, a relative
// path taken from `config_dir`), else DIR/NAME.log when pkitd.toml has an [output]
// dir (NAME is the full name: `web@2.log` for an instance); nullopt when there is
// none (no dir, or `file = ""`). Each key the service leaves out is pkitd.toml's.
// Fails, with a message naming `output.file`, on a variable `lookup` does not define
// or a path that expands to nothing or ends in "/".
std::expected<std::optional<LogFileSpec>, std::string> resolve_log_file(
    const ServiceSpec& spec, const DaemonSpec& daemon, std::string_view config_dir,
    const VariableLookup& lookup);

// The variables a service's `file` expands from, each later source overriding: pkitd's
// own environment (`process_env`), pkitd.toml's [env], then PKIT_SERVICE and
// PKIT_INSTANCE as a run gets them. Not the service's own env nor PKIT_RUN: one file
// outlives every run. The lookup refers to `spec` and `daemon`, which must outlive it.
VariableLookup log_file_variables(const ServiceSpec& spec, const DaemonSpec& daemon,
                                  VariableLookup process_env);

}  // namespace pkit::config
