// The requests that only read: `status`, `logs` (without --follow) and `explain`
// (SPEC §9). None waits for anything: a run still launching shows as starting.

#include <algorithm>
#include <variant>

#include "daemon/core/explain.hpp"
#include "daemon/shell/control/request_handler.hpp"

namespace pkit::shell {

void RequestHandler::handle_status(ConnectionId connection, const proto::Request& request) {
    auto services = targets(connection, request);
    if (!services) {
        return;
    }
    // Written straight into the reply line, a row at a time: no JSON tree and no vector
    // of rows for ten thousand services.
    const core::Supervisor& sup = m_daemon.supervisor();
    const core::Now now = m_daemon.now();
    // One pass over /proc for the whole request (SPEC §5 resources).
    std::vector<proto::Resources> used;
    if (request.resources) {
        used = m_daemon.resources(*services);
    }
    auto fill = [&](std::size_t k, proto::ServiceStatus& row) {
        std::size_t i = (*services)[k];
        row = status_row(i, now);
        if (request.resources) {
            row.resources.asked = true;
            if (sup.service(i).has_process()) {
                row.resources.value = used[k];
            }
        }
    };
    // "fields" (pkitctl's table): only those members of each row are written.
    m_server->reply(connection, proto::ok_status_reply(request.id, m_daemon.daemon_status(),
                                                       services->size(), fill, request.fields));
}

void RequestHandler::handle_logs(ConnectionId connection, const proto::Request& request) {
    auto index = target(connection, request);
    if (!index) {
        return;
    }
    if (request.follow && !subscribe(connection, request, *index)) {
        return;
    }
    const core::Service& s = m_daemon.supervisor().service(*index);
    const core::OutputTail& tail = request.previous ? s.previous_tail() : s.tail();
    auto run = request.previous ? s.previous_tail_run() : s.tail_run();
    proto::LogsResult result;
    if (run) {
        result.run = static_cast<int>(*run);
        std::size_t count = std::min<std::size_t>(tail.size(), request.lines);
        for (std::size_t k = tail.size() - count; k < tail.size(); ++k) {
            const core::TailLine& line = tail.at(k);
            result.lines.push_back(
                proto::LogLine{std::string(core::to_string(line.stream)), line.text, line.at});
        }
        result.truncated = tail.truncated();
    }
    result.state = std::string(core::to_string(s.state()));
    reply_ok(connection, request.id, result);
}

void RequestHandler::handle_explain(ConnectionId connection, const proto::Request& request) {
    auto index = target(connection, request);
    if (!index) {
        return;
    }
    core::Explanation e = core::explain(m_daemon.supervisor(), *index, m_daemon.now());
    proto::ExplainResult result;
    result.text = e.text;
    for (const auto& [key, value] : e.facts) {
        std::visit([&, &k = key](const auto& v) { result.facts[k] = v; }, value);
    }
    reply_ok(connection, request.id, result);
}

}  // namespace pkit::shell
