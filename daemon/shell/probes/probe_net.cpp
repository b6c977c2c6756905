#include "daemon/shell/probes/probe_net.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <charconv>
#include <cstring>

namespace pkit::shell {

namespace {

bool valid_port(std::string_view port) {
    unsigned value = 0;
    auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), value);
    return error == std::errc{} && end == port.data() + port.size() && value >= 1 && value <= 65535;
}

// The address as the kernel takes it, when `host` is a numeric IPv4 or IPv6 address:
// no resolver round trip (and no thread-pool slot) for the common 127.0.0.1 case.
std::optional<sockaddr_storage> numeric_address(const NetTarget& target) {
    sockaddr_storage storage{};
    int port = std::stoi(target.port);
    if (uv_ip4_addr(target.host.c_str(), port, reinterpret_cast<sockaddr_in*>(&storage)) == 0) {
        return storage;
    }
    if (uv_ip6_addr(target.host.c_str(), port, reinterpret_cast<sockaddr_in6*>(&storage)) == 0) {
        return storage;
    }
    return std::nullopt;
}

// A connection that passed: the probe's work is done.
class TcpAttempt final : public NetAttempt {
public:
    using NetAttempt::NetAttempt;

private:
    void on_connected() override { complete(true, "connected to " + address_text()); }
};

}  // namespace

std::optional<NetTarget> parse_tcp_target(std::string_view target) {
    NetTarget result;
    std::string_view port;
    if (target.starts_with('[')) {
        auto close = target.find("]:");
        if (close == std::string_view::npos) {
            return std::nullopt;
        }
        result.host = std::string(target.substr(1, close - 1));
        port = target.substr(close + 2);
    } else {
        auto colon = target.rfind(':');
        if (colon == std::string_view::npos || target.find(':') != colon) {
            return std::nullopt;
        }
        result.host = std::string(target.substr(0, colon));
        port = target.substr(colon + 1);
    }
    if (result.host.empty() || !valid_port(port)) {
        return std::nullopt;
    }
    result.port = std::string(port);
    return result;
}

std::optional<HttpTarget> parse_http_target(std::string_view url) {
    constexpr std::string_view scheme = "http://";
    if (url.size() < scheme.size() || url.substr(0, scheme.size()) != scheme) {
        return std::nullopt;
    }
    std::string_view rest = url.substr(scheme.size());
    auto slash = rest.find_first_of("/?#");
    std::string_view authority = rest.substr(0, slash);
    std::string_view path = slash == std::string_view::npos ? "/" : rest.substr(slash);
    path = path.substr(0, path.find('#'));  // a fragment is never sent
    HttpTarget result;
    result.host_header = std::string(authority);
    result.path = path.starts_with('/') ? std::string(path) : "/" + std::string(path);
    bool has_port = authority.starts_with('[') ? authority.find("]:") != std::string_view::npos
                                               : authority.find(':') != std::string_view::npos;
    auto net = parse_tcp_target(has_port ? std::string(authority) : std::string(authority) + ":80");
    if (!net || authority.find('@') != std::string_view::npos) {
        return std::nullopt;
    }
    result.net = std::move(*net);
    return result;
}

NetAttempt::NetAttempt(ProbeRunner& runner, const ProbeRequest& request, NetTarget target)
    : ProbeAttempt(runner, request), m_target(std::move(target)) {}

NetAttempt::~NetAttempt() {
    if (m_resolving != nullptr) {
        m_resolving->data = nullptr;
        // Succeeds only while the lookup waits for a thread; either way the callback
        // runs once and frees the request.
        uv_cancel(reinterpret_cast<uv_req_t*>(m_resolving));
    }
    if (m_connecting != nullptr) {
        m_connecting->data = nullptr;  // the close below calls it back with ECANCELED
    }
    m_tcp.reset();
}

std::string NetAttempt::address_text() const {
    if (m_next == 0 || m_next > m_addresses.size()) {
        return m_target.host + ":" + m_target.port;
    }
    const auto& storage = m_addresses[m_next - 1];
    char text[INET6_ADDRSTRLEN] = "";
    if (storage.ss_family == AF_INET6) {
        uv_ip6_name(reinterpret_cast<const sockaddr_in6*>(&storage), text, sizeof text);
        return "[" + std::string(text) + "]:" + m_target.port;
    }
    uv_ip4_name(reinterpret_cast<const sockaddr_in*>(&storage), text, sizeof text);
    return std::string(text) + ":" + m_target.port;
}

void NetAttempt::begin() {
    if (auto numeric = numeric_address(m_target)) {
        m_addresses.push_back(*numeric);
        connect_next();
        return;
    }
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    // No AI_ADDRCONFIG: in a container with only loopback it hides "localhost".
    hints.ai_flags = AI_NUMERICSERV;
    auto* req = new uv_getaddrinfo_t{};
    req->data = this;
    int rc = uv_getaddrinfo(loop(), req, &NetAttempt::on_resolved, m_target.host.c_str(),
                            m_target.port.c_str(), &hints);
    if (rc != 0) {
        delete req;
        complete(false, "cannot resolve " + m_target.host + ": " + uv_strerror(rc));
        return;
    }
    m_resolving = req;
}

void NetAttempt::on_resolved(uv_getaddrinfo_t* req, int status, addrinfo* result) {
    std::unique_ptr<uv_getaddrinfo_t> owned(req);
    auto* self = static_cast<NetAttempt*>(req->data);
    if (self == nullptr) {
        uv_freeaddrinfo(result);
        return;
    }
    self->m_resolving = nullptr;
    guarded([&] {
        for (addrinfo* entry = result; entry != nullptr; entry = entry->ai_next) {
            if (entry->ai_addrlen <= sizeof(sockaddr_storage)) {
                sockaddr_storage storage{};
                std::memcpy(&storage, entry->ai_addr, entry->ai_addrlen);
                self->m_addresses.push_back(storage);
            }
        }
    });
    uv_freeaddrinfo(result);
    guarded([&] {
        if (status < 0 || self->m_addresses.empty()) {
            self->complete(false, "cannot resolve " + self->m_target.host + ": " +
                                      uv_strerror(status < 0 ? status : UV_EAI_NONAME));
            return;
        }
        self->connect_next();
    });
}

void NetAttempt::connect_next() {
    while (m_next < m_addresses.size()) {
        const auto& address = m_addresses[m_next++];
        m_tcp = std::make_unique<UvHandle<uv_tcp_t>>(this);
        int rc = m_tcp->init(uv_tcp_init, loop());
        auto* req = new uv_connect_t{};
        req->data = this;
        if (rc == 0) {
            rc = uv_tcp_connect(req, m_tcp->get(), reinterpret_cast<const sockaddr*>(&address),
                                &NetAttempt::on_connect);
        }
        if (rc == 0) {
            m_connecting = req;
            return;
        }
        delete req;
        m_tcp.reset();
        m_last_error = uv_strerror(rc);
    }
    complete(false, m_last_error.empty() ? "no address to connect to" : m_last_error);
}

void NetAttempt::on_connect(uv_connect_t* req, int status) {
    std::unique_ptr<uv_connect_t> owned(req);
    auto* self = static_cast<NetAttempt*>(req->data);
    if (self == nullptr) {
        return;
    }
    self->m_connecting = nullptr;
    guarded([&] {
        if (status < 0) {
            self->m_last_error = uv_strerror(status);
            self->m_tcp.reset();
            self->connect_next();
            return;
        }
        self->on_connected();
    });
}

std::unique_ptr<ProbeAttempt> make_tcp_attempt(ProbeRunner& runner, const ProbeRequest& request) {
    auto target = parse_tcp_target(request.probe->target);
    if (!target) {
        return make_failed_attempt(runner, request,
                                   "bad tcp target \"" + request.probe->target + "\"");
    }
    return std::make_unique<TcpAttempt>(runner, request, std::move(*target));
}

}  // namespace pkit::shell
