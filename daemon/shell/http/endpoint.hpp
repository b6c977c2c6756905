#pragma once
// The HTTP endpoint as pkitd runs it (SPEC §11): pkitd.toml's [http] opened at
// start-up, re-applied at each reload, and served from what its HttpPort reads.

#include <expected>
#include <memory>
#include <string>

#include "config/model.hpp"
#include "daemon/shell/http/http_port.hpp"
#include "daemon/shell/http/server.hpp"

namespace pkit::shell::http {

class Endpoint {
public:
    explicit Endpoint(HttpPort& port) : m_port(port) {}
    ~Endpoint();
    Endpoint(const Endpoint&) = delete;
    Endpoint& operator=(const Endpoint&) = delete;

    // Start-up: listens on `spec.listen` when set. The error names the address and
    // why it cannot be bound (pkitd then exits 3).
    std::expected<void, std::string> open(const config::HttpSpec& spec);
    // After an upgrade in place: the listener the previous pkitd handed over.
    std::expected<void, std::string> adopt(const config::HttpSpec& spec, int fd);
    // Reload: a changed address closes the old listener and opens the new one (its
    // open connections end). When the new one cannot be bound, the error is logged
    // and the old address keeps serving, as with an invalid configuration. A host
    // name is resolved off the loop (uv_getaddrinfo): the switch then happens when the
    // answer comes back, the old address serving meanwhile; a later apply() supersedes
    // a resolution still under way.
    void apply(const config::HttpSpec& spec);
    // Closes the listener and every connection.
    void close() { m_server.reset(); }
    const Server* server() const { return m_server.get(); }
    // A reload's host name is being resolved.
    bool resolving() const { return m_resolving != nullptr; }

private:
    struct Resolution;
    Sources sources();
    // Switches to `listen` at `address` (the reload's second half).
    void switch_to(const std::string& listen, const sockaddr_storage& address);
    static void on_resolved(uv_getaddrinfo_t* req, int status, addrinfo* found);

    HttpPort& m_port;
    std::unique_ptr<Server> m_server;
    Resolution* m_resolving = nullptr;  // owned by libuv until on_resolved
};

}  // namespace pkit::shell::http
