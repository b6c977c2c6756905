// SPEC §18: which file a service's lines go to.

#include "config/log_file.hpp"

#include <filesystem>

namespace pkit::config {

std::expected<std::optional<LogFileSpec>, std::string> resolve_log_file(
    const ServiceSpec& spec, const DaemonSpec& daemon, std::string_view config_dir,
    const VariableLookup& lookup) {
    const LogFileKeys& keys = *spec.output.log;
    const DaemonOutputSpec& defaults = daemon.output;
    std::filesystem::path path;
    if (keys.path) {
        if (keys.path->empty()) {
            return std::nullopt;
        }
        auto expanded = expand_variables(*keys.path, lookup);
        if (!expanded) {
            return std::unexpected("output.file: " + expanded.error().message());
        }
        if (expanded->empty()) {
            return std::unexpected("output.file: " + std::string(*keys.path) +
                                   " expands to an empty path");
        }
        path = *expanded;
    } else if (defaults.dir && !defaults.dir->empty()) {
        path = std::filesystem::path(*defaults.dir) / (spec.name + ".log");
    } else {
        return std::nullopt;
    }
    if (!path.has_filename()) {
        return std::unexpected("output.file: " + path.string() + " names a directory, not a file");
    }
    if (path.is_relative()) {
        path = std::filesystem::path(config_dir) / path;
    }
    return LogFileSpec{
        .path = path.lexically_normal().string(),
        .max_size = keys.max_size.value_or(defaults.file_max_size),
        .keep = keys.keep.value_or(defaults.file_keep),
        .format = keys.format.value_or(defaults.file_format),
    };
}

VariableLookup log_file_variables(const ServiceSpec& spec, const DaemonSpec& daemon,
                                  VariableLookup process_env) {
    // PKIT_INSTANCE is "1" for a service of its own, as a run's environment has it.
    std::string instance = std::to_string(spec.instance == 0 ? 1 : spec.instance);
    return [&spec, &daemon, instance = std::move(instance), process_env = std::move(process_env)](
               std::string_view name) -> std::optional<std::string_view> {
        if (name == "PKIT_SERVICE") {
            return std::string_view(spec.name);
        }
        if (name == "PKIT_INSTANCE") {
            return std::string_view(instance);
        }
        if (auto it = daemon.env.find(std::string(name)); it != daemon.env.end()) {
            return std::string_view(it->second);
        }
        return process_env ? process_env(name) : std::nullopt;
    };
}

}  // namespace pkit::config
