#include "daemon/shell/http/endpoint.hpp"

#include <utility>

#include "daemon/shell/control/health_view.hpp"
#include "daemon/shell/daemon.hpp"
#include "daemon/shell/http/metrics.hpp"
#include "daemon/shell/io/resources.hpp"
#include "proto/version.hpp"

namespace pkit::shell::http {

Sources Endpoint::sources() {
    Daemon& daemon = m_daemon;
    Sources sources;
    sources.readiness = [&daemon] {
        proto::HealthResult health =
            health_result(std::as_const(daemon).supervisor(), daemon.now());
        return std::pair{health.ready, proto::json(health).dump()};
    };
    sources.metrics = [&daemon] {
        const core::Supervisor& sup = std::as_const(daemon).supervisor();
        core::Now now = daemon.now();
        MetricsInput input;
        input.supervisor = &sup;
        input.version = std::string(proto::version());
        input.start_time = now.wall - daemon.uptime();
        input.ready = health_result(sup, now).ready;
        input.orphans_reaped = daemon.orphans_reaped();
        input.resources = read_group_resources(run_groups(sup, sup.start_order()));
        return render_metrics(input);
    };
    return sources;
}

std::expected<void, std::string> Endpoint::open(const config::HttpSpec& spec) {
    if (!spec.listen) {
        return {};
    }
    auto server = Server::open(m_daemon.loop(), *spec.listen, sources());
    if (!server) {
        return std::unexpected(server.error());
    }
    m_server = std::move(*server);
    m_daemon.log("info", "http endpoint listening on " + *spec.listen);
    return {};
}

void Endpoint::apply(const config::HttpSpec& spec) {
    if (m_server && spec.listen && m_server->listen() == *spec.listen) {
        return;  // unchanged: the listener and its connections stay
    }
    if (!spec.listen) {
        if (m_server) {
            m_daemon.log("info", "reload: http endpoint on " + m_server->listen() + " closed");
        }
        m_server.reset();
        return;
    }
    auto server = Server::open(m_daemon.loop(), *spec.listen, sources());
    if (!server && m_server) {
        // The new address may overlap the old one (same port, another host): free it
        // and try again, and fall back to the old address if that fails too.
        std::string old = m_server->listen();
        m_server.reset();
        server = Server::open(m_daemon.loop(), *spec.listen, sources());
        if (!server) {
            m_daemon.log("error", "reload: " + server.error() + "; still serving on " + old);
            if (auto back = Server::open(m_daemon.loop(), old, sources())) {
                m_server = std::move(*back);
            } else {
                m_daemon.log("error", "reload: " + back.error() + "; http endpoint closed");
            }
            return;
        }
    }
    if (!server) {
        m_daemon.log("error", "reload: " + server.error());
        return;
    }
    m_server = std::move(*server);
    m_daemon.log("info", "reload: http endpoint listening on " + *spec.listen);
}

}  // namespace pkit::shell::http
