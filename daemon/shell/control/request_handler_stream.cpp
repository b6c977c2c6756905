// The streams (SPEC §9): `events` and `logs --follow`. After the reply the connection
// only streams; the daemon hands every event (publish) and every output line
// (publish_line) down to the handler, which sends each to its subscribers.

#include <algorithm>

#include "daemon/shell/control/request_handler.hpp"
#include "daemon/shell/views/event_view.hpp"

namespace pkit::shell {

namespace {

// The events a `logs --follow` stream carries besides lines: a new run begins
// (`started`, after a `restarting`), a run ends, supervision ends (`stopped`,
// `gave_up`, `restarts_exhausted`), so pkitctl can mark runs and end with the service.
bool follows_event(core::EventType type) {
    switch (type) {
        case core::EventType::started:
        case core::EventType::exited:
        case core::EventType::restarting:
        case core::EventType::stopped:
        case core::EventType::gave_up:
        case core::EventType::restarts_exhausted:
            return true;
        case core::EventType::ready:
        case core::EventType::storm_pause:
        case core::EventType::liveness_kill:
        case core::EventType::health:
        case core::EventType::group_failed:
        case core::EventType::escalated:
        case core::EventType::reload:
        case core::EventType::missed:
        case core::EventType::paused:
        case core::EventType::resumed:
        case core::EventType::log_error:
            return false;
    }
    return false;
}

}  // namespace

bool RequestHandler::subscribe(ConnectionId connection, const proto::Request& request,
                               std::size_t service) {
    bool events = service == k_events;
    auto same_kind = [&](const Follower& f) { return (f.service == k_events) == events; };
    auto streaming = static_cast<std::size_t>(std::ranges::count_if(m_followers, same_kind));
    if (streaming >= k_max_subscribers) {
        std::string what = events ? "events" : "logs --follow";
        m_server->reply_and_end(connection,
                                proto::error_reply(request.id, proto::ErrorCode::too_large,
                                                   "too many " + what + " subscribers (at most " +
                                                       std::to_string(k_max_subscribers) +
                                                       " at once); try again later"));
        return false;
    }
    auto event_head = std::make_shared<const std::string>(proto::event_head(request.id));
    SharedText head =
        events ? event_head : std::make_shared<const std::string>(proto::log_head(request.id));
    m_server->start_stream(connection);
    m_followers.push_back(Follower{connection, std::move(head), std::move(event_head), service});
    return true;
}

void RequestHandler::publish(const core::Event& event) {
    if (m_followers.empty()) {
        return;
    }
    // One body for every subscriber; each line is its head (with its id) and the body.
    // `logs --follow` streams its service's run changes and end too (see follows_event).
    std::optional<std::size_t> service;
    if (follows_event(event.type) && !event.service.empty()) {
        service = m_daemon.supervisor().find(event.service);
    }
    SharedText body;
    for (const Follower& f : m_followers) {
        if (f.service == k_events || (service && f.service == *service)) {
            if (!body) {
                body = std::make_shared<const std::string>(proto::stream_body(event_json(event)));
            }
            m_server->send(f.connection, f.event_head, body);
        }
    }
}

void RequestHandler::publish_line(std::size_t service, std::uint64_t run, core::Stream stream,
                                  std::string_view text, double wall) {
    if (m_followers.empty()) {
        return;
    }
    const core::Service& s = m_daemon.supervisor().service(service);
    if (!s.tail_run() || *s.tail_run() != run) {
        return;  // follow streams the latest run only
    }
    SharedText body;
    for (const Follower& f : m_followers) {
        if (f.service == service) {
            if (!body) {
                proto::json line =
                    proto::LogLine{std::string(core::to_string(stream)), std::string(text), wall};
                line["run"] = run;  // streamed lines name their run: pkitctl marks run changes
                body = std::make_shared<const std::string>(proto::stream_body(line));
            }
            m_server->send(f.connection, f.head, body);
        }
    }
}

}  // namespace pkit::shell
