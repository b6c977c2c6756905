// Fuzz target: one sd_notify datagram through shell::parse_notify_message, which
// pkitd runs on every datagram a service sends to its notify socket. Whatever the
// bytes, it must return without a sanitizer finding, and what it reports must come
// from the text: a STATUS is one line's value, READY/WATCHDOG need their "=1" field,
// an EXTEND_TIMEOUT_USEC needs its key.

#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "daemon/shell/io/notify_socket.hpp"

namespace {

void check(bool ok) {
    if (!ok) {
        std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const auto message = pkit::shell::parse_notify_message(text);
    if (message.status) {
        check(message.status->find('\n') == std::string::npos);
        check(text.find("STATUS=" + *message.status) != std::string_view::npos);
    }
    check(!message.ready || text.find("READY=1") != std::string_view::npos);
    check(!message.watchdog || text.find("WATCHDOG=1") != std::string_view::npos);
    check(!message.extend_timeout_usec ||
          text.find("EXTEND_TIMEOUT_USEC=") != std::string_view::npos);
    check(message.empty() ==
          (!message.ready && !message.status && !message.watchdog && !message.extend_timeout_usec));
    return 0;
}
