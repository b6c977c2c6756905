#include "proto/codes.hpp"

#include <array>
#include <utility>

namespace pkit::proto {
namespace {

constexpr std::array k_commands{
    std::pair{Command::ping, std::string_view{"ping"}},
    std::pair{Command::status, std::string_view{"status"}},
    std::pair{Command::start, std::string_view{"start"}},
    std::pair{Command::stop, std::string_view{"stop"}},
    std::pair{Command::restart, std::string_view{"restart"}},
    std::pair{Command::signal, std::string_view{"signal"}},
    std::pair{Command::logs, std::string_view{"logs"}},
    std::pair{Command::events, std::string_view{"events"}},
    std::pair{Command::explain, std::string_view{"explain"}},
    std::pair{Command::reload, std::string_view{"reload"}},
    std::pair{Command::shutdown, std::string_view{"shutdown"}},
    std::pair{Command::wait, std::string_view{"wait"}},
    std::pair{Command::health, std::string_view{"health"}},
    std::pair{Command::scale, std::string_view{"scale"}},
    std::pair{Command::upgrade, std::string_view{"upgrade"}},
    std::pair{Command::pause, std::string_view{"pause"}},
    std::pair{Command::resume, std::string_view{"resume"}},
    std::pair{Command::reload_preview, std::string_view{"reload_preview"}},
    std::pair{Command::rotate, std::string_view{"rotate"}},
};

constexpr std::array k_error_codes{
    std::pair{ErrorCode::bad_request, std::string_view{"bad_request"}},
    std::pair{ErrorCode::too_large, std::string_view{"too_large"}},
    std::pair{ErrorCode::unknown_command, std::string_view{"unknown_command"}},
    std::pair{ErrorCode::unknown_service, std::string_view{"unknown_service"}},
    std::pair{ErrorCode::invalid_config, std::string_view{"invalid_config"}},
    std::pair{ErrorCode::forbidden, std::string_view{"forbidden"}},
    std::pair{ErrorCode::not_reached, std::string_view{"not_reached"}},
    std::pair{ErrorCode::restart_failed, std::string_view{"restart_failed"}},
    std::pair{ErrorCode::upgrade_failed, std::string_view{"upgrade_failed"}},
    std::pair{ErrorCode::unsupported, std::string_view{"unsupported"}},
    std::pair{ErrorCode::not_running, std::string_view{"not_running"}},
};

template <typename Enum, std::size_t N>
std::string_view name_of(const std::array<std::pair<Enum, std::string_view>, N>& table,
                         Enum value) {
    for (const auto& [candidate, name] : table) {
        if (candidate == value) {
            return name;
        }
    }
    return "?";
}

template <typename Enum, std::size_t N>
std::optional<Enum> value_of(const std::array<std::pair<Enum, std::string_view>, N>& table,
                             std::string_view name) {
    for (const auto& [value, candidate] : table) {
        if (candidate == name) {
            return value;
        }
    }
    return std::nullopt;
}

}  // namespace

std::string_view to_string(Command command) {
    return name_of(k_commands, command);
}

std::optional<Command> command_from_string(std::string_view name) {
    return value_of(k_commands, name);
}

std::string_view to_string(ErrorCode code) {
    return name_of(k_error_codes, code);
}

std::optional<ErrorCode> error_code_from_string(std::string_view name) {
    return value_of(k_error_codes, name);
}

}  // namespace pkit::proto
