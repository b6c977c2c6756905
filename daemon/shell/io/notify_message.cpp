// Parsing of sd_notify datagrams (see notify_socket.hpp). Kept apart from the socket
// so the grammar can be tested without one.

#include <charconv>

#include "daemon/shell/io/notify_socket.hpp"

namespace pkit::shell {

NotifyMessage parse_notify_message(std::string_view text) {
    NotifyMessage message;
    while (!text.empty()) {
        auto end = text.find('\n');
        std::string_view line = text.substr(0, end);
        text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
        auto equals = line.find('=');
        if (equals == std::string_view::npos) {
            continue;
        }
        std::string_view key = line.substr(0, equals);
        std::string_view value = line.substr(equals + 1);
        if (key == "READY") {
            message.ready = message.ready || value == "1";
        } else if (key == "STATUS") {
            message.status = std::string(value);
        } else if (key == "WATCHDOG") {
            message.watchdog = message.watchdog || value == "1";
        } else if (key == "EXTEND_TIMEOUT_USEC") {
            std::uint64_t usec = 0;
            auto [stop, error] = std::from_chars(value.data(), value.data() + value.size(), usec);
            if (error == std::errc{} && stop == value.data() + value.size() && !value.empty()) {
                message.extend_timeout_usec = usec;
            }
        }
    }
    return message;
}

}  // namespace pkit::shell
