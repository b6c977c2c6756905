// The request handler's side of an upgrade in place (SPEC §16): what each client's
// request in flight waits for goes to the next pkitd beside its connection, and is
// registered there again, so that the new pkitd answers it as this one would have.

#include <chrono>

#include "daemon/shell/control/request_handler.hpp"

namespace pkit::shell {

std::vector<CarriedClient> RequestHandler::carry(core::TimePoint at) const {
    std::vector<CarriedClient> clients;
    if (!m_server) {
        return clients;
    }
    const core::Supervisor& sup = m_daemon.supervisor();
    auto names = [&](const std::vector<std::size_t>& services) {
        std::vector<std::string> out;
        out.reserve(services.size());
        for (std::size_t i : services) {
            out.push_back(sup.service(i).name());
        }
        return out;
    };
    for (auto& [id, connection] : m_server->carry()) {
        CarriedClient client{std::move(connection)};
        if (!client.connection.request.empty()) {
            client.waiting = CarriedWait::again;
            if (m_upgrading == id) {
                client.waiting = CarriedWait::upgrade;
            }
            for (const Pending& p : m_pending) {
                if (p.connection == id) {
                    client.waiting = CarriedWait::command;
                    client.services = names(p.services);
                    client.marks = p.runs;
                }
            }
            for (const Wait& w : m_waits) {
                if (w.connection == id) {
                    client.waiting = CarriedWait::wait;
                    client.services = names(w.services);
                    client.marks = w.episodes;
                    client.deadline_ns =
                        std::chrono::duration_cast<std::chrono::nanoseconds>(w.deadline - at)
                            .count();
                }
            }
        }
        clients.push_back(std::move(client));
    }
    return clients;
}

void RequestHandler::adopt_clients(std::vector<CarriedClient> clients, core::TimePoint saved,
                                   const proto::json& upgrade_result, bool from_scratch) {
    for (CarriedClient& client : clients) {
        // The server keeps the line as the connection's request outstanding.
        const std::string line = client.connection.request;
        auto id = m_server->adopt_connection(std::move(client.connection));
        if (!id) {
            continue;  // gone meanwhile
        }
        if (!line.empty()) {
            adopt_request(*id, line, client, saved, upgrade_result, from_scratch);
        }
        m_server->resume_carried(*id);
    }
}

void RequestHandler::adopt_request(ConnectionId connection, const std::string& line,
                                   CarriedClient& client, core::TimePoint saved,
                                   const proto::json& upgrade_result, bool from_scratch) {
    auto request = proto::parse_request(line);
    if (!request) {
        m_server->reply(connection, proto::error_reply(request.error()));
        return;
    }
    if (client.waiting == CarriedWait::upgrade) {
        reply_ok(connection, request->id, upgrade_result);
        return;
    }
    if (client.waiting == CarriedWait::again) {
        on_request(connection, std::move(*request));
        return;
    }
    if (from_scratch) {
        reply_error(connection, request->id, proto::ErrorCode::upgrade_failed,
                    "pkitd was upgraded but could not resume its state, and started every "
                    "service afresh: this request was not carried out to its end");
        return;
    }
    // The services by name: the configuration is the one the previous pkitd ran.
    const core::Supervisor& sup = m_daemon.supervisor();
    std::vector<std::size_t> services;
    for (const std::string& name : client.services) {
        auto index = sup.find(name);
        if (!index) {
            reply_error(connection, request->id, proto::ErrorCode::unknown_service,
                        "unknown service \"" + name + "\" after an upgrade of pkitd");
            return;
        }
        services.push_back(*index);
    }
    if (client.marks.size() != services.size()) {
        reply_error(connection, request->id, proto::ErrorCode::bad_request,
                    "pkitd was upgraded and cannot tell what this request waited for");
        return;
    }
    if (client.waiting == CarriedWait::command) {
        m_pending.push_back(Pending{connection, request->id, request->cmd, std::move(services),
                                    std::move(client.marks), std::nullopt});
        return;
    }
    Wait wait{connection,
              request->id,
              std::move(services),
              wait_for_of(request->wait_for),
              saved + std::chrono::nanoseconds(client.deadline_ns),
              request->within,
              std::move(client.marks)};
    m_daemon.wake_at(wait.deadline);
    m_waits.push_back(std::move(wait));
}

}  // namespace pkit::shell
