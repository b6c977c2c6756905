// Look-ups on a loaded tree and the display names of the model's enums.

#include "config/model.hpp"

#include <algorithm>

namespace pkit::config {

const ServiceSpec* Tree::find_service(std::string_view name) const {
    auto it = std::ranges::find(services, name, &ServiceSpec::name);
    return it == services.end() ? nullptr : &*it;
}

const GroupSpec* Tree::find_group(std::string_view name) const {
    auto it = std::ranges::find(daemon.groups, name, &GroupSpec::name);
    return it == daemon.groups.end() ? nullptr : &*it;
}

const GroupSpec* Tree::group_of(std::string_view service) const {
    const std::string_view file = service.substr(0, service.find('@'));
    for (const auto& group : daemon.groups) {
        for (const std::string& member : group.members) {
            if (member == service || (file.size() < service.size() && member == file)) {
                return &group;
            }
        }
    }
    return nullptr;
}

std::string_view to_string(ServiceType type) {
    switch (type) {
        case ServiceType::service:
            return "service";
        case ServiceType::oneshot:
            return "oneshot";
    }
    return "?";
}

std::string_view to_string(RestartOrder order) {
    switch (order) {
        case RestartOrder::stop_first:
            return "stop_first";
        case RestartOrder::start_first:
            return "start_first";
    }
    return "stop_first";
}

std::string_view to_string(ListenKind kind) {
    switch (kind) {
        case ListenKind::tcp:
            return "tcp";
        case ListenKind::udp:
            return "udp";
        case ListenKind::unix_:
            return "unix";
    }
    return "tcp";
}

std::string_view to_string(RestartPolicy policy) {
    switch (policy) {
        case RestartPolicy::on_crash:
            return "on_crash";
        case RestartPolicy::always:
            return "always";
        case RestartPolicy::never:
            return "never";
    }
    return "?";
}

std::string_view to_string(LaunchError error) {
    switch (error) {
        case LaunchError::not_found:
            return "not_found";
        case LaunchError::permission_denied:
            return "permission_denied";
        case LaunchError::bad_cwd:
            return "bad_cwd";
        case LaunchError::bad_user:
            return "bad_user";
        case LaunchError::bad_env_file:
            return "bad_env_file";
        case LaunchError::exec_format:
            return "exec_format";
        case LaunchError::resources:
            return "resources";
        case LaunchError::other:
            return "other";
        case LaunchError::sandbox:
            return "sandbox";
        case LaunchError::undefined_variable:
            return "undefined_variable";
    }
    return "?";
}

std::string_view to_string(ProbeKind kind) {
    switch (kind) {
        case ProbeKind::none:
            return "none";
        case ProbeKind::exec:
            return "exec";
        case ProbeKind::tcp:
            return "tcp";
        case ProbeKind::http:
            return "http";
        case ProbeKind::file:
            return "file";
        case ProbeKind::watchdog:
            return "watchdog";
    }
    return "?";
}

std::string_view to_string(Strategy strategy) {
    switch (strategy) {
        case Strategy::one_for_one:
            return "one_for_one";
        case Strategy::one_for_all:
            return "one_for_all";
        case Strategy::rest_for_one:
            return "rest_for_one";
    }
    return "?";
}

std::string_view to_string(Forward forward) {
    switch (forward) {
        case Forward::prefix:
            return "prefix";
        case Forward::raw:
            return "raw";
        case Forward::none:
            return "none";
    }
    return "?";
}

std::string_view to_string(LogFormat format) {
    switch (format) {
        case LogFormat::text:
            return "text";
        case LogFormat::json:
            return "json";
        case LogFormat::raw:
            return "raw";
    }
    return "text";
}

std::string_view to_string(CgroupMode mode) {
    switch (mode) {
        case CgroupMode::automatic:
            return "auto";
        case CgroupMode::off:
            return "off";
        case CgroupMode::required:
            return "required";
    }
    return "?";
}

std::string_view to_string(ProtectSystem mode) {
    switch (mode) {
        case ProtectSystem::off:
            return "off";
        case ProtectSystem::full:
            return "full";
        case ProtectSystem::strict:
            return "strict";
    }
    return "off";
}

}  // namespace pkit::config
