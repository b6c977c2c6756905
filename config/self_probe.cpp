// A start_first service whose [ready] or [health] probe reaches its own [[listen]]
// socket (SPEC §14, §21). During a start_first restart the old run keeps accepting on
// that socket, so it answers the probe meant for the new run: a new run that never
// serves counts as ready, the old one is stopped, and the service is down. The check
// compares addresses as the kernel would route them, not as written: a socket on
// 0.0.0.0 or :: is reached at 127.0.0.1 and localhost, and a file probe of a Unix
// socket's path finds the file pkitd made. Nothing is resolved: a probe host that is
// a name other than localhost is taken to be another host.

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>

#include "config/load_steps.hpp"

namespace pkit::config::detail {
namespace {

struct Address {
    std::string host;  // lower case, without brackets
    std::uint16_t port = 0;
};

std::string lower(std::string_view text) {
    std::string out(text);
    std::ranges::transform(out, out.begin(),
                           [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

// "host:port" or "[v6]:port" (the form check_tcp_target() accepted); `default_port`
// when there is no port (an http URL's authority).
std::optional<Address> split_authority(std::string_view text, std::uint16_t default_port) {
    Address out{.host = std::string(text), .port = default_port};
    std::size_t colon = text.rfind(':');
    std::size_t bracket = text.rfind(']');
    if (colon != std::string_view::npos && (bracket == std::string_view::npos || colon > bracket)) {
        std::string_view port = text.substr(colon + 1);
        unsigned value = 0;
        auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
        if (ec != std::errc{} || end != port.data() + port.size() || value == 0 || value > 65535) {
            return std::nullopt;
        }
        out.port = static_cast<std::uint16_t>(value);
        out.host = std::string(text.substr(0, colon));
    }
    if (out.host.size() >= 2 && out.host.front() == '[' && out.host.back() == ']') {
        out.host = out.host.substr(1, out.host.size() - 2);
    }
    out.host = lower(out.host);
    return out;
}

// Where a tcp or http probe connects; nullopt for other kinds and for a target with a
// variable (known only at each attempt).
std::optional<Address> probe_address(const ProbeSpec& probe) {
    if (probe.target.find("${") != std::string::npos) {
        return std::nullopt;
    }
    if (probe.kind == ProbeKind::tcp) {
        return split_authority(probe.target, 0);
    }
    if (probe.kind == ProbeKind::http) {
        std::string_view rest =
            std::string_view(probe.target).substr(std::string_view("http://").size());
        return split_authority(rest.substr(0, rest.find('/')), 80);
    }
    return std::nullopt;
}

bool unspecified(const std::string& host) {
    return host == "0.0.0.0" || host == "::" || host == "0:0:0:0:0:0:0:0";
}

bool loopback(const std::string& host) {
    return host == "localhost" || host.ends_with(".localhost") || host.starts_with("127.") ||
           host == "::1" || host == "0:0:0:0:0:0:0:1";
}

// Whether a connection to `probe` reaches a socket listening on `listen` (numeric).
bool reaches(const ListenSpec& listen, const Address& probe) {
    if (listen.kind != ListenKind::tcp || listen.port != probe.port) {
        return false;
    }
    const std::string host = lower(listen.host);
    if (host == probe.host) {
        return true;
    }
    // A connection to 0.0.0.0 or :: goes to this host, as one to loopback does.
    const bool local = loopback(probe.host) || unspecified(probe.host);
    if (unspecified(host)) {
        return local;
    }
    // localhost may resolve to either loopback address.
    return probe.host == "localhost" && loopback(host);
}

bool same_path(const std::string& a, const std::string& b) {
    return std::filesystem::path(a).lexically_normal() ==
           std::filesystem::path(b).lexically_normal();
}

// The [[listen]] entry `probe` reaches, or nullptr.
const ListenSpec* reached_socket(const ProbeSpec& probe, const std::vector<ListenSpec>& listen) {
    if (probe.kind == ProbeKind::file) {
        for (const ListenSpec& entry : listen) {
            if (entry.kind == ListenKind::unix_ && !probe.target.empty() &&
                probe.target.find("${") == std::string::npos &&
                same_path(entry.address, probe.target)) {
                return &entry;
            }
        }
        return nullptr;
    }
    auto address = probe_address(probe);
    if (!address) {
        return nullptr;
    }
    for (const ListenSpec& entry : listen) {
        if (reaches(entry, *address)) {
            return &entry;
        }
    }
    return nullptr;
}

// The position of the probe key in `section` ([ready] or [health]) of the file.
Pos probe_key_pos(const TableReader& top, std::string_view section, ProbeKind kind) {
    const toml::table* table = top.table()[section].as_table();
    if (table == nullptr) {
        return top.header_pos();
    }
    auto it = table->find(to_string(kind));
    return it == table->end() ? pos_of(*table) : pos_of(it->first);
}

void warn_one(const TableReader& top, std::string_view section, const ProbeSpec& probe,
              const std::vector<ListenSpec>& listen, std::vector<Diagnostic>& out) {
    const ListenSpec* socket = reached_socket(probe, listen);
    if (socket == nullptr) {
        return;
    }
    const bool ready = section == "ready";
    std::string what = cat(section, ".", to_string(probe.kind));
    std::string message =
        cat(what, ": ", quote(probe.target), " reaches this service's own [[listen]] socket ",
            quote(socket->address), " (line ", std::to_string(socket->line),
            "), which the old run keeps answering during a start_first restart",
            ready ? ": a new run that never serves would count as ready, and the old run "
                    "would be stopped; use [ready] notify = true (gunicorn: with --preload, "
                    "so that it loads the application before it says READY=1), or probe a "
                    "port only the new run listens on"
                  : ": the probe cannot tell the runs apart while they overlap; use [health] "
                    "watchdog (with [ready] notify = true), or probe a port only the new run "
                    "listens on");
    Pos pos = probe_key_pos(top, section, probe.kind);
    out.push_back(Diagnostic{top.diags().file(), pos.line, pos.column, std::move(message), true});
}

}  // namespace

void warn_self_probes(const TableReader& top, const ServiceSpec& spec,
                      std::vector<Diagnostic>& out) {
    if (spec.restart.order != RestartOrder::start_first || spec.listen->empty()) {
        return;
    }
    if (spec.ready->probe.enabled()) {
        warn_one(top, "ready", spec.ready->probe, *spec.listen, out);
    }
    if (spec.health->enabled()) {
        warn_one(top, "health", *spec.health, *spec.listen, out);
    }
}

}  // namespace pkit::config::detail
