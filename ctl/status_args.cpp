#include "ctl/status_args.hpp"

#include <string_view>

namespace pkit::ctl {
namespace {

constexpr std::string_view k_command = "status";

// A word CLI11 takes as a value or a name: not an option, not "--", not the command.
bool plain_word(std::string_view word) {
    return !word.empty() && word.front() != '-' && word != k_command;
}

}  // namespace

std::optional<StatusArgs> read_status_args(const std::vector<std::string>& args) {
    StatusArgs read;
    bool command = false;
    bool socket = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string_view word = args[i];
        if (!read.options.names.empty() && !plain_word(word)) {
            return std::nullopt;  // only names after the first name
        }
        if (word == "--json") {
            if (read.global.json) {
                return std::nullopt;
            }
            read.global.json = true;
        } else if (word == "--socket" || word.starts_with("--socket=")) {
            std::string_view path = word.substr(std::string_view("--socket").size());
            if (path.empty()) {
                if (i + 1 == args.size()) {
                    return std::nullopt;
                }
                path = args[++i];
            } else {
                path.remove_prefix(1);  // the '='
            }
            if (socket || !plain_word(path)) {
                return std::nullopt;
            }
            socket = true;
            read.global.socket = std::string(path);
        } else if (word == "--tree" || word == "--resources") {
            bool& flag = word == "--tree" ? read.options.tree : read.options.resources;
            if (!command || flag) {
                return std::nullopt;  // before the command: not a global option
            }
            flag = true;
        } else if (word == k_command && !command) {
            command = true;
        } else if (command && plain_word(word)) {
            read.options.names.emplace_back(word);
        } else {
            return std::nullopt;
        }
    }
    if (!command) {
        return std::nullopt;
    }
    return read;
}

}  // namespace pkit::ctl
