// The requests that only read: `status`, `logs` (without --follow) and `explain`
// (SPEC §9). None waits for a run: a run still launching shows as starting. Only
// `status --resources` is answered on a later turn, once its pass over /proc is done.

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string_view>
#include <unordered_map>

#include "daemon/shell/control/request_handler.hpp"
#include "daemon/shell/views/explain_view.hpp"
#include "daemon/shell/views/health_view.hpp"

namespace pkit::shell {

namespace {

double millisecond_of(double at) {
    return std::floor(at * 1000.0) / 1000.0;
}

// How many of `older`'s last lines (read back from the file, whose times have
// milliseconds only) are the first lines of `tail`: the longest such overlap, so that a
// line the file and the tail both hold is shown once.
std::size_t overlap(const std::vector<proto::LogLine>& older,
                    const std::vector<proto::LogLine>& tail) {
    auto same = [](const proto::LogLine& file, const proto::LogLine& kept) {
        return file.stream == kept.stream && file.text == kept.text &&
               std::abs(file.at - millisecond_of(kept.at)) < 0.0005;
    };
    for (std::size_t length = std::min(older.size(), tail.size()); length > 0; --length) {
        const std::size_t from = older.size() - length;
        bool all = true;
        for (std::size_t k = 0; all && k < length; ++k) {
            all = same(older[from + k], tail[k]);
        }
        if (all) {
            return length;
        }
    }
    return 0;
}

}  // namespace

void RequestHandler::handle_status(ConnectionId connection, const proto::Request& request) {
    if (!request.resources) {
        reply_status(connection, request, nullptr);
        return;
    }
    if (!targets(connection, request)) {
        return;  // an unknown name is answered at once, without a pass
    }
    // The pass over /proc (SPEC §5 resources) runs off the loop: 150 ms at 10,000
    // services, which no turn may hold. The reply is written when it is done, with the
    // rows as they are then; other requests are answered meanwhile.
    std::weak_ptr<bool> alive = m_alive;
    m_daemon.read_resources(
        [this, alive, connection, request](const DaemonPort::ResourcesReading& reading) {
            if (!alive.expired()) {
                reply_status(connection, request, &reading);
            }
        });
}

void RequestHandler::reply_status(ConnectionId connection, const proto::Request& request,
                                  const DaemonPort::ResourcesReading* reading) {
    auto services = targets(connection, request);  // again: a reload may have come
    if (!services) {
        return;
    }
    // Written straight into the reply line, a row at a time: no JSON tree and no vector
    // of rows for ten thousand services.
    const core::Supervisor& sup = m_daemon.supervisor();
    const core::Now now = m_daemon.now();
    std::vector<pid_t> groups;
    // The reading's index of each service: its index now, unless a reload since the
    // pass moved it (then found by name).
    std::unordered_map<std::string_view, std::size_t> moved;
    if (reading != nullptr) {
        groups = run_groups(sup, *services);
        for (std::size_t i : *services) {
            if (i >= reading->names.size() || reading->names[i] != sup.service(i).name()) {
                for (std::size_t j = 0; j < reading->names.size(); ++j) {
                    moved.emplace(reading->names[j], j);
                }
                break;
            }
        }
    }
    auto used_by = [&](std::size_t k) -> std::optional<proto::Resources> {
        const std::size_t i = (*services)[k];
        std::size_t at = i;
        if (!moved.empty()) {
            auto found = moved.find(sup.service(i).name());
            if (found == moved.end()) {
                return std::nullopt;
            }
            at = found->second;
        }
        // The same run as the pass read, or nothing: a run started since was not read.
        if (groups[k] <= 0 || at >= reading->used.size() || reading->groups[at] != groups[k]) {
            return std::nullopt;
        }
        return reading->used[at];
    };
    auto fill = [&](std::size_t k, proto::ServiceStatus& row) {
        std::size_t i = (*services)[k];
        row = status_row(i, now);
        if (reading != nullptr) {
            row.resources.asked = true;
            if (sup.service(i).has_process()) {
                row.resources.value = used_by(k);
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
    // The tail's lines at or after `since`, then the last `lines` of them.
    std::size_t first = 0;
    while (run && request.since && first < tail.size() && tail.at(first).at < *request.since) {
        ++first;
    }
    const std::size_t available = run ? tail.size() - first : 0;
    const std::size_t count = std::min<std::size_t>(available, request.lines);
    if (run) {
        result.run = static_cast<int>(*run);
        for (std::size_t k = tail.size() - count; k < tail.size(); ++k) {
            const core::TailLine& line = tail.at(k);
            result.lines.push_back(
                proto::LogLine{std::string(core::to_string(line.stream)), line.text, line.at});
        }
        result.truncated = tail.truncated();
    }
    result.state = std::string(core::to_string(s.state()));
    // SPEC §18: more than the tail holds, or `since` before its oldest line, reads on
    // back through the log file (off the loop); the lines before the tail's oldest only.
    const bool older_wanted = request.since ? first == 0 : count == available;
    const std::size_t more = std::min<std::size_t>(
        request.lines > static_cast<int>(count) ? request.lines - count : 0, k_read_back_lines);
    if (request.previous || request.follow || !older_wanted || more == 0) {
        reply_ok(connection, request.id, result);
        return;
    }
    ReadBackQuery query{.max_lines = more, .since = request.since};
    if (!result.lines.empty()) {
        // Up to the end of the millisecond of the tail's oldest line: the lines the file
        // and the tail both hold there are found and shown once (overlap).
        const double first_ms = millisecond_of(result.lines.front().at);
        std::size_t shared = 0;
        while (shared < result.lines.size() &&
               millisecond_of(result.lines[shared].at) == first_ms) {
            ++shared;
        }
        query.max_lines += shared;
        query.before = first_ms + 0.001;
    }
    std::weak_ptr<bool> alive = m_alive;
    auto answer = [this, alive, connection, id = request.id, result, query_lines = more](
                      std::expected<std::vector<proto::LogLine>, std::string> older) mutable {
        if (alive.expired()) {
            return;
        }
        if (older && !older->empty()) {
            older->resize(older->size() - overlap(*older, result.lines));
            const std::size_t wanted = query_lines;
            if (older->size() > wanted) {
                older->erase(older->begin(),
                             older->begin() + static_cast<std::ptrdiff_t>(older->size() - wanted));
            }
            older->insert(older->end(), std::make_move_iterator(result.lines.begin()),
                          std::make_move_iterator(result.lines.end()));
            result.lines = std::move(*older);
            result.truncated = false;
        }
        reply_ok(connection, id, result);
    };
    if (!m_daemon.read_log(*index, query, answer)) {
        reply_ok(connection, request.id, result);
    }
}

void RequestHandler::handle_rotate(ConnectionId connection, const proto::Request& request) {
    auto services = targets(connection, request);
    if (!services) {
        return;
    }
    proto::json rotated = proto::json::array();
    for (std::size_t i : *services) {
        if (m_daemon.rotate_log(i)) {
            rotated.push_back(m_daemon.supervisor().service(i).name());
        }
    }
    reply_ok(connection, request.id, proto::json{{"rotated", std::move(rotated)}});
}

void RequestHandler::handle_explain(ConnectionId connection, const proto::Request& request) {
    auto index = target(connection, request);
    if (!index) {
        return;
    }
    reply_ok(connection, request.id, explain_result(m_daemon.supervisor(), *index, m_daemon.now()));
}

}  // namespace pkit::shell
