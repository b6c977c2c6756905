#pragma once
// The HTTP endpoint as pkitd runs it (SPEC §11): pkitd.toml's [http] opened at
// start-up, re-applied at each reload, and served from the Daemon's records.

#include <expected>
#include <memory>
#include <string>

#include "config/model.hpp"
#include "daemon/shell/http/server.hpp"

namespace pkit::shell {
class Daemon;
}

namespace pkit::shell::http {

class Endpoint {
public:
    explicit Endpoint(Daemon& daemon) : m_daemon(daemon) {}

    // Start-up: listens on `spec.listen` when set. The error names the address and
    // why it cannot be bound (pkitd then exits 3).
    std::expected<void, std::string> open(const config::HttpSpec& spec);
    // Reload: a changed address closes the old listener and opens the new one (its
    // open connections end). When the new one cannot be bound, the error is logged
    // and the old address keeps serving, as with an invalid configuration.
    void apply(const config::HttpSpec& spec);
    // Closes the listener and every connection.
    void close() { m_server.reset(); }
    const Server* server() const { return m_server.get(); }

private:
    Sources sources();

    Daemon& m_daemon;
    std::unique_ptr<Server> m_server;
};

}  // namespace pkit::shell::http
