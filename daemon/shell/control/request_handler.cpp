// RequestHandler's dispatch and what every request family shares: the socket and its
// access, resolving the services a request names, replies and status rows.

#include "daemon/shell/control/request_handler.hpp"

#include <algorithm>
#include <utility>

#include "config/accounts.hpp"
#include "config/model.hpp"
#include "config/suggest.hpp"
#include "daemon/shell/views/event_view.hpp"
#include "daemon/shell/views/health_view.hpp"

namespace pkit::shell {

namespace {

// pkitd.toml's control_users and control_group, resolved into `options`; names that
// resolve to nothing are logged and left out.
void resolve_access(DaemonPort& daemon, SocketOptions& options) {
    const config::DaemonSpec& spec = daemon.supervisor().daemon_spec();
    options.allowed_uids.clear();
    options.allowed_gid.reset();
    for (const config::Principal& user : spec.control_users) {
        if (auto uid = config::user_id(user)) {
            options.allowed_uids.push_back(*uid);
        } else {
            daemon.log("warning",
                       "control_users: unknown user \"" + user.name.value_or("?") + "\" ignored");
        }
    }
    if (spec.control_group) {
        options.allowed_gid = config::group_id(*spec.control_group);
        if (!options.allowed_gid) {
            daemon.log("warning", "control_group: unknown group \"" +
                                      spec.control_group->name.value_or("?") + "\" ignored");
        }
    }
}

// `unknown service "wbe"; did you mean "web"?`: the suggestion among the services
// pkitd has now (instances included, retired slots not).
std::string unknown_service_message(const core::Supervisor& sup, std::string_view name) {
    std::vector<std::string> names;
    names.reserve(sup.size());
    for (std::size_t i = 0; i < sup.size(); ++i) {
        if (!sup.retired(i)) {
            names.push_back(sup.service(i).spec().name);
        }
    }
    return "unknown service \"" + std::string(name) + "\"" +
           config::detail::did_you_mean(name, names);
}

}  // namespace

std::expected<std::unique_ptr<RequestHandler>, std::string> RequestHandler::open(
    uv_loop_t* loop, const std::string& socket_path, DaemonPort& daemon) {
    SocketOptions options;
    options.path = socket_path;
    resolve_access(daemon, options);
    std::unique_ptr<RequestHandler> handler(new RequestHandler(daemon));
    auto server = ControlServer::open(loop, std::move(options), *handler);
    if (!server) {
        return std::unexpected(server.error());
    }
    handler->m_server = std::move(*server);
    return handler;
}

std::expected<std::unique_ptr<RequestHandler>, std::string> RequestHandler::adopt(
    uv_loop_t* loop, const std::string& socket_path, DaemonPort& daemon, int fd) {
    SocketOptions options;
    options.path = socket_path;
    resolve_access(daemon, options);
    std::unique_ptr<RequestHandler> handler(new RequestHandler(daemon));
    auto server = ControlServer::adopt(loop, std::move(options), *handler, fd);
    if (!server) {
        return std::unexpected(server.error());
    }
    handler->m_server = std::move(*server);
    return handler;
}

int RequestHandler::listener_fd() const {
    return m_server ? m_server->listener_fd() : -1;
}

RequestHandler::~RequestHandler() {
    m_server.reset();
}

void RequestHandler::apply_access() {
    SocketOptions access;
    resolve_access(m_daemon, access);
    auto applied = m_server->set_access(std::move(access.allowed_uids), access.allowed_gid);
    if (!applied) {
        m_daemon.log("error", "reload: " + applied.error());
    }
}

void RequestHandler::reply_ok(ConnectionId connection, const proto::json& id,
                              const proto::json& result) {
    m_server->reply(connection, proto::ok_reply(id, result));
}

void RequestHandler::reply_error(ConnectionId connection, const proto::json& id,
                                 proto::ErrorCode code, const std::string& message) {
    m_server->reply(connection, proto::error_reply(id, code, message));
}

std::optional<std::vector<std::size_t>> RequestHandler::targets(ConnectionId connection,
                                                                const proto::Request& request) {
    const core::Supervisor& sup = m_daemon.supervisor();
    std::vector<std::size_t> found;
    if (request.all ||
        ((request.cmd == proto::Command::status || request.cmd == proto::Command::rotate) &&
         request.services.empty())) {
        return sup.start_order();
    }
    // A name given twice is one service: acted on once, one status row (the parser
    // merges duplicate names already; this holds for any request).
    std::vector<bool> seen(sup.size(), false);
    std::vector<std::string_view> unknown;
    for (const std::string& name : request.services) {
        auto named = sup.find_all(name);  // NAME: all its instances (SPEC §13)
        if (named.empty()) {
            unknown.push_back(name);
        }
        for (std::size_t i : named) {
            if (!seen[i]) {
                seen[i] = true;
                found.push_back(i);
            }
        }
    }
    if (unknown.size() == 1) {
        reply_error(connection, request.id, proto::ErrorCode::unknown_service,
                    unknown_service_message(sup, unknown.front()));
        return std::nullopt;
    }
    if (!unknown.empty()) {
        // Named in full up to a few, so that a hostile list gets a short reply.
        constexpr std::size_t k_named = 8;
        std::string names;
        for (std::size_t k = 0; k < unknown.size() && k < k_named; ++k) {
            names += (names.empty() ? "\"" : ", \"") + std::string(unknown[k]) + "\"";
        }
        if (unknown.size() > k_named) {
            names += " and " + std::to_string(unknown.size() - k_named) + " more";
        }
        reply_error(connection, request.id, proto::ErrorCode::unknown_service,
                    "unknown service " + names);
        return std::nullopt;
    }
    return found;
}

std::optional<std::size_t> RequestHandler::target(ConnectionId connection,
                                                  const proto::Request& request) {
    auto index = m_daemon.supervisor().find(request.service);
    if (!index) {
        reply_error(connection, request.id, proto::ErrorCode::unknown_service,
                    unknown_service_message(m_daemon.supervisor(), request.service));
    }
    return index;
}

proto::json RequestHandler::services_json(const std::vector<std::size_t>& services) {
    return proto::ServicesResult{statuses(services)};
}

std::vector<proto::ServiceStatus> RequestHandler::statuses(
    const std::vector<std::size_t>& services) const {
    core::Now now = m_daemon.now();
    std::vector<proto::ServiceStatus> result;
    result.reserve(services.size());
    for (std::size_t i : services) {
        result.push_back(status_row(i, now));
    }
    return result;
}

proto::ServiceStatus RequestHandler::status_row(std::size_t i, core::Now now) const {
    proto::ServiceStatus row = service_status(m_daemon.supervisor().service(i), now);
    row.resource_limits = m_daemon.resource_limits(i);
    row.log_file = m_daemon.log_file(i);
    return row;
}

void RequestHandler::on_request(ConnectionId connection, proto::Request request) {
    using proto::Command;
    switch (request.cmd) {
        case Command::ping: {
            proto::DaemonStatus daemon = m_daemon.daemon_status();
            reply_ok(connection, request.id,
                     proto::PingResult{daemon.pid, daemon.version, daemon.protocol, daemon.uptime});
            return;
        }
        case Command::status:
            handle_status(connection, request);
            return;
        case Command::start:
        case Command::stop:
        case Command::restart:
            handle_control(connection, request);
            return;
        case Command::signal:
            handle_signal(connection, request);
            return;
        case Command::logs:
            handle_logs(connection, request);
            return;
        case Command::events:
            if (subscribe(connection, request, k_events)) {
                reply_ok(connection, request.id, proto::json::object());
            }
            return;
        case Command::explain:
            handle_explain(connection, request);
            return;
        case Command::reload:
            handle_reload(connection, request);
            return;
        case Command::reload_preview:
            handle_reload_preview(connection, request);
            return;
        case Command::wait:
            handle_wait(connection, request);
            return;
        case Command::shutdown:
            reply_ok(connection, request.id, proto::json::object());
            m_daemon.request_shutdown("requested over the control socket");
            return;
        case Command::health:
            reply_ok(connection, request.id, health_result(m_daemon.supervisor(), m_daemon.now()));
            return;
        case Command::scale:
            handle_scale(connection, request);
            return;
        case Command::rotate:
            handle_rotate(connection, request);
            return;
        case Command::pause:
        case Command::resume:
            handle_pause(connection, request);
            return;
        case Command::upgrade:
            m_upgrading = connection;
            m_daemon.upgrade(request.binary, [this, connection, id = request.id](
                                                 const DaemonPort::UpgradeResult& result) {
                if (m_upgrading == connection) {
                    m_upgrading.reset();
                }
                if (!result) {
                    reply_error(connection, id, proto::ErrorCode::upgrade_failed, result.error());
                    return;
                }
                reply_ok(connection, id,
                         proto::json{{"from", result->first}, {"to", result->second}});
            });
            return;
    }
}

void RequestHandler::on_disconnect(ConnectionId connection) {
    if (m_upgrading == connection) {
        m_upgrading.reset();
    }
    std::erase_if(m_followers, [&](const Follower& f) { return f.connection == connection; });
    std::erase_if(m_pending, [&](const Pending& p) { return p.connection == connection; });
    std::erase_if(m_waits, [&](const Wait& w) { return w.connection == connection; });
}

void RequestHandler::after_pump() {
    check_waits();
    check_pending();
}

bool RequestHandler::refers_to(std::size_t service) const {
    auto names = [&](const std::vector<std::size_t>& services) {
        return std::ranges::find(services, service) != services.end();
    };
    return std::ranges::any_of(m_pending, [&](const Pending& p) { return names(p.services); }) ||
           std::ranges::any_of(m_waits, [&](const Wait& w) { return names(w.services); }) ||
           std::ranges::any_of(m_followers,
                               [&](const Follower& f) { return f.service == service; });
}

}  // namespace pkit::shell
