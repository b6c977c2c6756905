// Well-formedness of tcp and http probe targets.

#include "config/probe_targets.hpp"

#include <charconv>

#include "config/toml_reader.hpp"

namespace pkit::config::detail {
namespace {

bool valid_port(std::string_view text) {
    unsigned port = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
    return !text.empty() && ec == std::errc{} && end == text.data() + text.size() && port >= 1 &&
           port <= 65535;
}

bool plain_text(std::string_view text) {
    for (char c : text) {
        if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
            return false;
        }
    }
    return true;
}

// "host" or "[v6]" alone; nullopt when fine.
std::optional<std::string> check_host(std::string_view host) {
    if (host.empty() || host == "[]") {
        return "the host is missing";
    }
    if (host.front() == '[') {
        if (host.back() != ']') {
            return "an IPv6 address needs its closing \"]\"";
        }
        return std::nullopt;
    }
    if (host.find_first_of(":[]@") != std::string_view::npos || !plain_text(host)) {
        return cat(quote(host), " is not a host name or address (write IPv6 as \"[::1]\")");
    }
    return std::nullopt;
}

// "host[:port]"; the port is required when `need_port`.
std::optional<std::string> check_authority(std::string_view text, bool need_port) {
    std::size_t colon = text.rfind(':');
    std::size_t bracket = text.rfind(']');
    bool has_port =
        colon != std::string_view::npos && (bracket == std::string_view::npos || colon > bracket);
    if (!has_port) {
        if (need_port) {
            return cat(quote(text), " is not \"host:port\" (e.g. \"127.0.0.1:8080\")");
        }
        return check_host(text);
    }
    std::string_view port = text.substr(colon + 1);
    if (!valid_port(port)) {
        return cat("port ", quote(port), " is not a number from 1 to 65535");
    }
    return check_host(text.substr(0, colon));
}

}  // namespace

std::optional<std::string> check_tcp_target(std::string_view target) {
    return check_authority(target, true);
}

std::optional<std::string> check_http_target(std::string_view url) {
    constexpr std::string_view scheme = "http://";
    if (url.starts_with("https://")) {
        return "https is not supported (the probe speaks plain HTTP); use an http:// URL";
    }
    if (!url.starts_with(scheme)) {
        return cat(quote(url), " is not an http://host[:port][/path] URL");
    }
    std::string_view rest = url.substr(scheme.size());
    std::size_t slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
    if (authority.find('@') != std::string_view::npos) {
        return "user information (\"user@\") is not supported in the URL";
    }
    if (authority.find_first_of("?#") != std::string_view::npos) {
        return cat(quote(url), " is not an http://host[:port][/path] URL");
    }
    if (auto problem = check_authority(authority, false)) {
        return problem;
    }
    if (!plain_text(path)) {
        return "the path must not contain spaces or control characters (percent-encode them)";
    }
    return std::nullopt;
}

}  // namespace pkit::config::detail
