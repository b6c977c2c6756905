// The control server's side of an upgrade in place (SPEC §16): every connection but the
// streaming ones is handed to the next pkitd as it stands (its descriptor, the bytes it
// received and not handled, the replies not written yet, the request in flight), and
// taken over there.

#include <unistd.h>

#include <algorithm>

#include "daemon/shell/control/control_server_connection.hpp"

namespace pkit::shell {

std::vector<std::pair<ConnectionId, CarriedConnection>> ControlServer::carry() const {
    std::vector<std::pair<ConnectionId, CarriedConnection>> carried;
    for (const auto& [id, connection] : m_connections) {
        if (!connection->streaming()) {
            carried.emplace_back(id, connection->carry());
        }
    }
    std::ranges::sort(carried, {}, &std::pair<ConnectionId, CarriedConnection>::first);
    return carried;
}

std::optional<ConnectionId> ControlServer::adopt_connection(CarriedConnection carried) {
    ConnectionId id = m_next_id++;
    auto connection = std::make_unique<Connection>(*this, id);
    Connection& added = *connection;
    m_connections.emplace(id, std::move(connection));
    if (added.adopt(std::move(carried)) != 0) {
        added.drop();
        retire(id, false);
        return std::nullopt;
    }
    if (find(id) == nullptr) {
        return std::nullopt;  // the client was gone: its connection closed at once
    }
    return id;
}

void ControlServer::resume_carried(ConnectionId id) {
    if (auto* connection = find(id)) {
        connection->resume();
    }
}

CarriedConnection ControlServer::Connection::carry() const {
    CarriedConnection carried;
    carried.fd = fd();
    carried.served = m_served;
    carried.finishing = m_finishing;
    carried.eof = m_eof;
    carried.input.assign(m_input, std::min(m_start, m_input.size()));
    if (m_busy) {
        carried.request = m_request;
    }
    // libuv holds the writes under way and counts the bytes it has not written yet; the
    // writes complete in order, so those bytes are the last of their pieces.
    std::size_t unwritten = uv_stream_get_write_queue_size(m_pipe.as_stream());
    std::size_t held = 0;
    for (const WriteRequest* request : m_writes) {
        for (const SharedText& piece : request->pieces) {
            held += piece->size();
        }
    }
    std::size_t skip = held - std::min(unwritten, held);
    for (const WriteRequest* request : m_writes) {
        for (const SharedText& piece : request->pieces) {
            if (skip >= piece->size()) {
                skip -= piece->size();
                continue;
            }
            carried.output.append(*piece, skip);
            skip = 0;
        }
    }
    for (const SharedText& piece : m_queue) {
        carried.output += *piece;
    }
    return carried;
}

int ControlServer::Connection::adopt(CarriedConnection carried) {
    if (int rc = uv_pipe_open(m_pipe.get(), carried.fd); rc != 0) {
        ::close(carried.fd);
        return rc;
    }
    m_served = carried.served;
    m_eof = carried.eof;
    m_input = std::move(carried.input);
    m_busy = !carried.request.empty() && !carried.finishing;
    if (m_busy) {
        m_request = std::move(carried.request);
    }
    if (!carried.output.empty() && !write(std::move(carried.output))) {
        return 0;  // the client is gone: closed already
    }
    if (carried.finishing) {
        finish();  // as the previous pkitd was doing: write what is left, then shut down
    }
    return 0;
}

void ControlServer::Connection::resume() {
    if (!m_closed && !m_finishing) {
        pump();
    }
}

}  // namespace pkit::shell
