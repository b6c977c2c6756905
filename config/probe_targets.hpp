#pragma once
// Checks of probe targets (internal to pkitconfig, tested directly): a tcp
// "host:port" and an http URL. Each returns what is wrong, or nullopt when the
// target is well-formed. Nothing is resolved here.

#include <optional>
#include <string>
#include <string_view>

namespace pkit::config::detail {

// "host:port", "[v6addr]:port"; port 1..65535.
std::optional<std::string> check_tcp_target(std::string_view target);

// "http://host[:port][/path]". https is refused with its own message: the probe
// speaks plain HTTP only.
std::optional<std::string> check_http_target(std::string_view url);

}  // namespace pkit::config::detail
