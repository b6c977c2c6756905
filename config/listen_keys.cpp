// [[listen]] of a service file (SPEC §14): the form of each entry. Whether its socket
// can be bound is found when pkitd binds it (daemon/shell/listen/).

#include <cctype>
#include <charconv>
#include <limits>
#include <string_view>

#include "config/load_steps.hpp"
#include "config/probe_targets.hpp"

namespace pkit::config::detail {
namespace {

constexpr std::int64_t k_max_backlog = std::numeric_limits<int>::max();

// Four decimal parts of 0-255.
bool numeric_ipv4(const std::string& host) {
    int parts = 0;
    std::size_t at = 0;
    while (at <= host.size()) {
        std::size_t dot = host.find('.', at);
        std::string_view part = std::string_view(host).substr(
            at, dot == std::string::npos ? std::string::npos : dot - at);
        unsigned value = 256;
        auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
        if (part.empty() || part.size() > 3 || ec != std::errc{} ||
            end != part.data() + part.size() || value > 255) {
            return false;
        }
        ++parts;
        if (dot == std::string::npos) {
            break;
        }
        at = dot + 1;
    }
    return parts == 4;
}

// The form of an IPv6 address (hex groups, colons, at most one "::", an IPv4 tail);
// what inet_pton(3) would still refuse is refused when pkitd binds, at the same entry.
bool numeric_ipv6(const std::string& host) {
    if (host.find(':') == std::string::npos || host.size() > 45) {
        return false;
    }
    if (host.find("::") != host.rfind("::") || host.find(":::") != std::string::npos) {
        return false;
    }
    for (char c : host) {
        if (!std::isxdigit(static_cast<unsigned char>(c)) && c != ':' && c != '.') {
            return false;
        }
    }
    return true;
}

// "HOST:PORT" with a numeric host ("[v6]" for IPv6): pkitd binds at load time and
// never waits for a name server there.
bool parse_inet(const Diags& d, const toml::node& node, std::string_view what,
                const std::string& text, ListenSpec& out) {
    if (auto problem = check_tcp_target(text)) {
        d.error(pos_of(node), cat(what, ": ", *problem));
        return false;
    }
    std::size_t colon = text.rfind(':');
    std::string host = text.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[') {
        host = host.substr(1, host.size() - 2);
    }
    bool v6 = numeric_ipv6(host);
    if (!v6 && !numeric_ipv4(host)) {
        d.error(pos_of(node), cat(what, ": ", quote(host),
                                  " is not a numeric address (\"0.0.0.0:80\", \"[::]:80\"); "
                                  "names are not resolved here"));
        return false;
    }
    if (v6 && text.front() != '[') {
        d.error(pos_of(node),
                cat(what, ": write an IPv6 address in brackets, \"[", host, "]:PORT\""));
        return false;
    }
    unsigned port = 0;
    std::string_view digits = std::string_view(text).substr(colon + 1);
    std::from_chars(digits.data(), digits.data() + digits.size(), port);
    out.host = std::move(host);
    out.port = static_cast<std::uint16_t>(port);
    return true;
}

// A string of octal digits, as `umask` takes it.
std::optional<unsigned> read_mode(const Diags& d, const toml::node& node, std::string_view what) {
    const auto* text = node.as_string();
    const std::string digits = text != nullptr ? text->get() : std::string();
    unsigned value = 0;
    bool ok = text != nullptr && !digits.empty() && digits.size() <= 4;
    for (char c : digits) {
        ok = ok && c >= '0' && c <= '7';
        value = value * 8 + static_cast<unsigned>(c - '0');
    }
    if (!ok || value > 07777) {
        d.error(pos_of(node), cat(what, ": expected an octal mode string like \"0660\", got ",
                                  text != nullptr ? quote(digits) : type_name(node)));
        return std::nullopt;
    }
    return value;
}

void parse_entry(const Diags& d, const toml::table& table, std::size_t index,
                 std::vector<ListenSpec>& out) {
    (void)index;
    const std::string path = "listen";
    const Pos at = pos_of(table);
    TableReader entry(d, table, path,
                      {"tcp", "udp", "unix", "name", "backlog", "mode", "owner", "group"}, at);
    ListenSpec spec;
    spec.line = at.line;
    spec.column = at.column;
    int kinds = 0;
    bool ok = true;
    for (auto [key, kind] : {std::pair{"tcp", ListenKind::tcp}, std::pair{"udp", ListenKind::udp},
                             std::pair{"unix", ListenKind::unix_}}) {
        const toml::node* node = entry.get(key);
        if (node == nullptr) {
            continue;
        }
        if (++kinds > 1) {
            d.error(entry.key_pos(key), cat(entry.what(key),
                                            ": an entry is one socket: give one of \"tcp\", "
                                            "\"udp\" or \"unix\""));
            ok = false;
            continue;
        }
        auto text = read_string(d, *node, entry.what(key));
        if (!text) {
            ok = false;
            continue;
        }
        spec.kind = kind;
        spec.address = *text;
        if (kind == ListenKind::unix_) {
            if (text->front() != '/') {
                d.error(pos_of(*node),
                        cat(entry.what(key), ": ", quote(*text), " is not an absolute path"));
                ok = false;
            } else if (text->size() > 107) {
                d.error(pos_of(*node),
                        cat(entry.what(key), ": a Unix socket path has at most 107 bytes"));
                ok = false;
            }
        } else {
            ok = parse_inet(d, *node, entry.what(key), *text, spec) && ok;
        }
    }
    if (kinds == 0) {
        d.error(at, cat(path, ": missing \"tcp\", \"udp\" or \"unix\""));
        ok = false;
    }
    if (const toml::node* node = entry.get("name")) {
        auto name = read_string(d, *node, entry.what("name"));
        // LISTEN_FDNAMES separates names with ':' (sd_listen_fds_with_names(3)).
        if (name && (name->size() > 255 || name->find_first_of(":\n") != std::string::npos)) {
            d.error(pos_of(*node),
                    cat(entry.what("name"), ": a name has at most 255 characters and no \":\""));
            ok = false;
        } else if (name) {
            spec.name = std::move(*name);
        }
    }
    entry.read("backlog", spec.backlog,
               [](const Diags& dd, const toml::node& n, std::string_view w) -> std::optional<int> {
                   auto value = read_int(dd, n, w, 1, k_max_backlog);
                   return value ? std::optional<int>(static_cast<int>(*value)) : std::nullopt;
               });
    auto as_principal = [](const Diags& dd, const toml::node& n, std::string_view w) {
        return read_principal(dd, n, w);
    };
    for (std::string_view key : {"mode", "owner", "group"}) {
        if (entry.get(key) != nullptr && spec.kind != ListenKind::unix_ && kinds == 1) {
            d.error(entry.key_pos(key),
                    cat(entry.what(key), ": only a \"unix\" socket has a ", key));
            ok = false;
        }
    }
    entry.read("mode", spec.mode, read_mode);
    entry.read("owner", spec.owner, as_principal);
    entry.read("group", spec.group, as_principal);
    entry.report_unknown();
    if (ok) {
        out.push_back(std::move(spec));
    }
}

}  // namespace

void parse_listen(const TableReader& top, std::vector<ListenSpec>& out) {
    const toml::node* node = top.get("listen");
    if (node == nullptr) {
        return;
    }
    const toml::array* array = node->as_array();
    if (array == nullptr) {
        top.diags().error(pos_of(*node), cat("listen: expected an array of tables ([[listen]]), "
                                             "got ",
                                             type_name(*node)));
        if (const toml::table* table = node->as_table()) {
            std::vector<ListenSpec> ignored;
            parse_entry(top.diags(), *table, 0, ignored);  // its keys are still checked
        }
        return;
    }
    for (std::size_t i = 0; i < array->size(); ++i) {
        const toml::node& element = (*array)[i];
        if (const toml::table* table = element.as_table()) {
            parse_entry(top.diags(), *table, i, out);
        } else {
            top.diags().error(pos_of(element),
                              cat("listen: expected a table, got ", type_name(element)));
        }
    }
    // Two entries of one file on one socket cannot both be bound.
    for (std::size_t i = 0; i < out.size(); ++i) {
        for (std::size_t j = 0; j < i; ++j) {
            if (out[i].same_socket(out[j])) {
                top.diags().error(Pos{out[i].line, out[i].column},
                                  cat("listen: ", quote(out[i].address),
                                      " is already declared by an earlier entry"));
            }
        }
    }
}

}  // namespace pkit::config::detail
