#include "daemon/shell/http/endpoint.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include "daemon/shell/http/metrics.hpp"
#include "daemon/shell/views/health_view.hpp"
#include "proto/version.hpp"

namespace pkit::shell::http {

Sources Endpoint::sources() {
    HttpPort& port = m_port;
    Sources sources;
    sources.readiness = [&port] {
        proto::HealthResult health = health_result(std::as_const(port).supervisor(), port.now());
        return std::pair{health.ready, proto::json(health).dump()};
    };
    sources.metrics = [&port] {
        const core::Supervisor& sup = std::as_const(port).supervisor();
        core::Now now = port.now();
        MetricsInput input;
        input.supervisor = &sup;
        input.version = std::string(proto::version());
        input.start_time = now.wall - port.uptime();
        input.ready = health_result(sup, now).ready;
        input.orphans_reaped = port.orphans_reaped();
        MetricsSnapshot snapshot = snapshot_metrics(input);
        const std::vector<std::size_t>& order = sup.start_order();
        for (std::size_t k = 0; k < order.size() && k < snapshot.rows.size(); ++k) {
            if (auto log = port.log_file_stats(order[k])) {  // SPEC §18
                snapshot.rows[k].log_bytes = static_cast<double>(log->bytes);
                snapshot.rows[k].log_dropped = static_cast<double>(log->dropped);
                snapshot.rows[k].log_rotations = static_cast<double>(log->rotations);
            }
        }
        // The /proc and cgroup reads are left to the MetricsCache, which makes them off
        // the loop, as `status` reads them (read_run_resources).
        snapshot.groups = run_groups(sup, sup.start_order());
        snapshot.cgroups = std::as_const(port).run_cgroup_reads(sup.start_order());
        return snapshot;
    };
    return sources;
}

std::expected<void, std::string> Endpoint::open(const config::HttpSpec& spec) {
    if (!spec.listen) {
        return {};
    }
    auto server = Server::open(m_port.loop(), *spec.listen, sources());
    if (!server) {
        return std::unexpected(server.error());
    }
    m_server = std::move(*server);
    m_port.log("info", "http endpoint listening on " + *spec.listen);
    return {};
}

std::expected<void, std::string> Endpoint::adopt(const config::HttpSpec& spec, int fd) {
    auto server = Server::adopt(m_port.loop(), spec.listen.value_or(""), sources(), fd);
    if (!server) {
        return std::unexpected(server.error());
    }
    m_server = std::move(*server);
    return {};
}

// A reload's uv_getaddrinfo: detached (owner null) when superseded or when the
// Endpoint goes, then only freed when libuv hands it back.
struct Endpoint::Resolution {
    uv_getaddrinfo_t req{};
    Endpoint* owner = nullptr;
    std::string listen;
};

Endpoint::~Endpoint() {
    if (m_resolving != nullptr) {
        m_resolving->owner = nullptr;
        (void)uv_cancel(reinterpret_cast<uv_req_t*>(&m_resolving->req));
        m_resolving = nullptr;
    }
}

void Endpoint::apply(const config::HttpSpec& spec) {
    if (m_resolving != nullptr) {
        // Superseded: its answer is dropped when it comes.
        m_resolving->owner = nullptr;
        (void)uv_cancel(reinterpret_cast<uv_req_t*>(&m_resolving->req));
        m_resolving = nullptr;
    }
    if (m_server) {
        m_server->metrics().invalidate();  // the services may have changed
    }
    if (m_server && spec.listen && m_server->listen() == *spec.listen) {
        return;  // unchanged: the listener and its connections stay
    }
    if (!spec.listen) {
        if (m_server) {
            m_port.log("info", "reload: http endpoint on " + m_server->listen() + " closed");
        }
        m_server.reset();
        return;
    }
    if (auto address = Server::numeric_address(*spec.listen)) {
        switch_to(*spec.listen, *address);
        return;
    }
    // A name: getaddrinfo may wait on DNS for seconds, so it runs on libuv's pool.
    auto resolution = std::make_unique<Resolution>();
    resolution->req.data = resolution.get();
    resolution->owner = this;
    resolution->listen = *spec.listen;
    auto [host, port] = Server::split_listen(*spec.listen);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    int rc = uv_getaddrinfo(m_port.loop(), &resolution->req, &Endpoint::on_resolved, host.c_str(),
                            port.c_str(), &hints);
    if (rc != 0) {
        m_port.log("error", "reload: cannot listen on " + *spec.listen +
                                " ([http] listen): cannot resolve \"" + host +
                                "\": " + uv_strerror(rc));
        return;
    }
    m_resolving = resolution.release();
}

// On the loop, when the pool's getaddrinfo is done (or was cancelled).
void Endpoint::on_resolved(uv_getaddrinfo_t* req, int status, addrinfo* found) {
    std::unique_ptr<Resolution> resolution(static_cast<Resolution*>(req->data));
    std::optional<sockaddr_storage> address;
    if (status == 0 && found != nullptr) {
        address.emplace();
        std::memcpy(&*address, found->ai_addr,
                    std::min<std::size_t>(found->ai_addrlen, sizeof(sockaddr_storage)));
    }
    uv_freeaddrinfo(found);
    Endpoint* self = resolution->owner;
    if (self == nullptr) {
        return;  // superseded, or the endpoint is gone
    }
    self->m_resolving = nullptr;
    try {
        if (!address) {
            auto [host, port] = Server::split_listen(resolution->listen);
            std::string still =
                self->m_server ? "; still serving on " + self->m_server->listen() : "";
            self->m_port.log("error", "reload: cannot listen on " + resolution->listen +
                                          " ([http] listen): cannot resolve \"" + host +
                                          "\": " + uv_strerror(status) + still);
            return;
        }
        self->switch_to(resolution->listen, *address);
    } catch (...) {
        // Never into libuv: out of memory while logging; the old address stays.
    }
}

void Endpoint::switch_to(const std::string& listen, const sockaddr_storage& address) {
    auto server = Server::open_at(m_port.loop(), listen, address, sources());
    if (!server && m_server) {
        // The new address may overlap the old one (same port, another host): free it
        // and try again, and fall back to the old address if that fails too.
        std::string old = m_server->listen();
        sockaddr_storage old_address = m_server->address();
        m_server.reset();
        server = Server::open_at(m_port.loop(), listen, address, sources());
        if (!server) {
            m_port.log("error", "reload: " + server.error() + "; still serving on " + old);
            if (auto back = Server::open_at(m_port.loop(), old, old_address, sources())) {
                m_server = std::move(*back);
            } else {
                m_port.log("error", "reload: " + back.error() + "; http endpoint closed");
            }
            return;
        }
    }
    if (!server) {
        m_port.log("error", "reload: " + server.error());
        return;
    }
    m_server = std::move(*server);
    m_port.log("info", "reload: http endpoint listening on " + listen);
}

}  // namespace pkit::shell::http
