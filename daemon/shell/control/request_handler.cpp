#include "daemon/shell/control/request_handler.hpp"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <utility>

#include "config/loader.hpp"
#include "config/values.hpp"
#include "daemon/core/explain.hpp"
#include "daemon/shell/control/event_view.hpp"
#include "daemon/shell/control/health_view.hpp"
#include "daemon/shell/daemon.hpp"
#include "daemon/shell/io/resources.hpp"
#include "daemon/shell/launch/launcher.hpp"
#include "proto/version.hpp"

namespace pkit::shell {

namespace {

constexpr std::size_t k_events = SIZE_MAX;

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
            return false;
    }
    return false;
}

std::optional<uid_t> resolve_user(const config::Principal& p) {
    if (p.id) {
        return *p.id;
    }
    if (p.name) {
        if (const passwd* pw = ::getpwnam(p.name->c_str())) {
            return pw->pw_uid;
        }
    }
    return std::nullopt;
}

std::optional<gid_t> resolve_group(const config::Principal& p) {
    if (p.id) {
        return *p.id;
    }
    if (p.name) {
        if (const group* gr = ::getgrnam(p.name->c_str())) {
            return gr->gr_gid;
        }
    }
    return std::nullopt;
}

// pkitd.toml's control_users and control_group, resolved into `options`; names that
// resolve to nothing are logged and left out.
void resolve_access(Daemon& daemon, SocketOptions& options) {
    const config::DaemonSpec& spec = std::as_const(daemon).supervisor().daemon_spec();
    options.allowed_uids.clear();
    options.allowed_gid.reset();
    for (const config::Principal& user : spec.control_users) {
        if (auto uid = resolve_user(user)) {
            options.allowed_uids.push_back(*uid);
        } else {
            daemon.log("warning",
                       "control_users: unknown user \"" + user.name.value_or("?") + "\" ignored");
        }
    }
    if (spec.control_group) {
        options.allowed_gid = resolve_group(*spec.control_group);
        if (!options.allowed_gid) {
            daemon.log("warning", "control_group: unknown group \"" +
                                      spec.control_group->name.value_or("?") + "\" ignored");
        }
    }
}

}  // namespace

std::expected<std::unique_ptr<RequestHandler>, std::string> RequestHandler::open(Daemon& daemon) {
    SocketOptions options;
    options.path = daemon.options().socket_path;
    resolve_access(daemon, options);
    std::unique_ptr<RequestHandler> handler(new RequestHandler(daemon));
    auto server = ControlServer::open(daemon.loop(), std::move(options), *handler);
    if (!server) {
        return std::unexpected(server.error());
    }
    handler->m_server = std::move(*server);
    return handler;
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
    const core::Supervisor& sup = std::as_const(m_daemon).supervisor();
    std::vector<std::size_t> found;
    if (request.all || (request.cmd == proto::Command::status && request.services.empty())) {
        return sup.start_order();
    }
    // A name given twice is one service: acted on once, one status row (the parser
    // merges duplicate names already; this holds for any request).
    std::vector<bool> seen(sup.size(), false);
    std::vector<std::string_view> unknown;
    for (const std::string& name : request.services) {
        if (auto i = sup.find(name)) {
            if (!seen[*i]) {
                seen[*i] = true;
                found.push_back(*i);
            }
        } else {
            unknown.push_back(name);
        }
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

proto::json RequestHandler::services_json(const std::vector<std::size_t>& services) {
    return proto::ServicesResult{statuses(services)};
}

std::vector<proto::ServiceStatus> RequestHandler::statuses(
    const std::vector<std::size_t>& services) const {
    const core::Supervisor& sup = std::as_const(m_daemon).supervisor();
    core::Now now = m_daemon.now();
    std::vector<proto::ServiceStatus> result;
    result.reserve(services.size());
    for (std::size_t i : services) {
        result.push_back(service_status(sup.service(i), now));
    }
    return result;
}

void RequestHandler::on_request(ConnectionId connection, proto::Request request) {
    using proto::Command;
    switch (request.cmd) {
        case Command::ping: {
            proto::PingResult ping{static_cast<int>(::getpid()), std::string(proto::version()),
                                   proto::k_protocol_version, m_daemon.uptime()};
            reply_ok(connection, request.id, ping);
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
        case Command::wait:
            handle_wait(connection, request);
            return;
        case Command::shutdown:
            reply_ok(connection, request.id, proto::json::object());
            m_daemon.request_shutdown("requested over the control socket");
            return;
        case Command::health:
            reply_ok(connection, request.id,
                     health_result(std::as_const(m_daemon).supervisor(), m_daemon.now()));
            return;
    }
}

void RequestHandler::on_disconnect(ConnectionId connection) {
    std::erase_if(m_followers, [&](const Follower& f) { return f.connection == connection; });
    std::erase_if(m_pending, [&](const Pending& p) { return p.connection == connection; });
    std::erase_if(m_waits, [&](const Wait& w) { return w.connection == connection; });
}

void RequestHandler::handle_status(ConnectionId connection, const proto::Request& request) {
    auto services = targets(connection, request);
    if (!services) {
        return;
    }
    proto::DaemonStatus daemon;
    daemon.pid = static_cast<int>(::getpid());
    daemon.version = std::string(proto::version());
    daemon.uptime = m_daemon.uptime();
    daemon.config_dir = m_daemon.options().config_dir;
    daemon.socket = m_daemon.options().socket_path;
    daemon.state = m_daemon.shutting_down() ? "shutting_down" : "running";
    daemon.orphans_reaped = static_cast<int>(m_daemon.orphans_reaped());
    daemon.storm_pauses = std::as_const(m_daemon).supervisor().daemon_storm_pauses();
    // Written straight into the reply line: no JSON tree for a thousand services.
    proto::StatusResult result{std::move(daemon), statuses(*services)};
    if (request.resources) {
        // One pass over /proc for the whole request (SPEC §5 resources).
        const core::Supervisor& sup = std::as_const(m_daemon).supervisor();
        std::vector<proto::Resources> used =
            read_group_resources(run_groups(sup, *services), m_daemon.proc_stats());
        for (std::size_t k = 0; k < services->size(); ++k) {
            proto::ServiceStatus& status = result.services[k];
            status.resources.asked = true;
            if (sup.service((*services)[k]).has_process()) {
                status.resources.value = used[k];
            }
        }
    }
    // "fields" (pkitctl's table): only those members of each row are written.
    m_server->reply(connection, proto::ok_reply(request.id, result, request.fields));
}

void RequestHandler::handle_control(ConnectionId connection, const proto::Request& request) {
    auto services = targets(connection, request);
    if (!services) {
        return;
    }
    // The core can stop only a run whose pid it knows.
    m_daemon.resolve_launches();
    core::Supervisor& sup = m_daemon.supervisor();
    Pending pending{connection, request.id, request.cmd, *services, {}};
    // Every run is noted before anything is acted on, so that each is compared with its
    // run from before the request. Noted one by one, a service acted on earlier in the
    // same request (a name given twice, before names were merged) had its new run
    // noted, launched but not spawned yet: the second restart did nothing to it, and
    // the reply waited for that run to end, for ever.
    for (std::size_t i : *services) {
        pending.runs.push_back(sup.service(i).run());
    }
    for (std::size_t i : *services) {
        core::Now now = m_daemon.now();
        if (request.cmd == proto::Command::start) {
            sup.start_service(i, now);
        } else if (request.cmd == proto::Command::stop) {
            sup.stop_service(i, now);
        } else {
            sup.restart_service(i, now);
        }
    }
    if (request.no_block) {
        // Accepted: the commands are issued (the pump sends the signals); the rows
        // show the services as they are now, not the outcome.
        m_daemon.pump();
        reply_ok(connection, request.id, services_json(pending.services));
        return;
    }
    m_pending.push_back(std::move(pending));
    m_daemon.pump();  // replies through after_pump once the runs have ended
}

bool RequestHandler::pending_done(const Pending& pending) const {
    const core::Supervisor& sup = std::as_const(m_daemon).supervisor();
    for (std::size_t k = 0; k < pending.services.size(); ++k) {
        const core::Service& s = sup.service(pending.services[k]);
        core::State state = s.state();
        if (state == core::State::stopping || state == core::State::starting) {
            return false;
        }
        // A restart has happened once a new run exists, or the service is left waiting
        // for its dependencies (after a pump, waiting means blocked).
        if (pending.cmd == proto::Command::restart && sup.shutting_down() == false &&
            s.run() == pending.runs[k] && state != core::State::waiting &&
            state != core::State::stopped) {
            return false;
        }
    }
    return true;
}

void RequestHandler::after_pump() {
    check_waits();
    if (m_pending.empty()) {
        return;
    }
    std::vector<Pending> ready;
    std::erase_if(m_pending, [&](Pending& p) {
        if (!pending_done(p)) {
            return false;
        }
        ready.push_back(std::move(p));
        return true;
    });
    for (const Pending& p : ready) {
        reply_ok(p.connection, p.id, services_json(p.services));
    }
}

void RequestHandler::handle_signal(ConnectionId connection, const proto::Request& request) {
    auto services = targets(connection, request);
    if (!services) {
        return;
    }
    auto signo = config::parse_signal(request.signal);
    if (!signo) {
        reply_error(connection, request.id, proto::ErrorCode::bad_request,
                    "\"signal\": unknown signal \"" + request.signal + "\"");
        return;
    }
    m_daemon.resolve_launches();  // a launching run gets its signal too
    for (std::size_t i : *services) {
        const core::Service& s = m_daemon.supervisor().service(i);
        if (s.has_process()) {
            signal_run(s.pid(), *signo, request.group);
        }
    }
    reply_ok(connection, request.id, services_json(*services));
}

void RequestHandler::handle_logs(ConnectionId connection, const proto::Request& request) {
    auto index = std::as_const(m_daemon).supervisor().find(request.service);
    if (!index) {
        reply_error(connection, request.id, proto::ErrorCode::unknown_service,
                    "unknown service \"" + request.service + "\"");
        return;
    }
    if (request.follow && !subscribe(connection, request, *index)) {
        return;
    }
    const core::Service& s = std::as_const(m_daemon).supervisor().service(*index);
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

void RequestHandler::handle_explain(ConnectionId connection, const proto::Request& request) {
    auto index = std::as_const(m_daemon).supervisor().find(request.service);
    if (!index) {
        reply_error(connection, request.id, proto::ErrorCode::unknown_service,
                    "unknown service \"" + request.service + "\"");
        return;
    }
    core::Explanation e =
        core::explain(std::as_const(m_daemon).supervisor(), *index, m_daemon.now());
    proto::ExplainResult result;
    result.text = e.text;
    for (const auto& [key, value] : e.facts) {
        std::visit([&, &k = key](const auto& v) { result.facts[k] = v; }, value);
    }
    reply_ok(connection, request.id, result);
}

// Answered when the reload has been read (on a worker thread) and applied; until
// then the loop serves other connections, and this one's next request waits.
void RequestHandler::handle_reload(ConnectionId connection, const proto::Request& request) {
    m_daemon.reload([this, connection, id = request.id](const Daemon::ReloadResult& outcome) {
        if (!outcome) {
            reply_error(connection, id, proto::ErrorCode::invalid_config, outcome.error());
            return;
        }
        proto::ReloadResult result;
        result.added = outcome->added;
        result.removed = outcome->removed;
        result.changed = outcome->changed;
        result.unchanged = outcome->unchanged;
        reply_ok(connection, id, result);
    });
}

void RequestHandler::reload_from_signal() {
    m_daemon.reload([](const Daemon::ReloadResult&) {});  // answered in the log only
}

void RequestHandler::publish(const core::Event& event) {
    if (m_followers.empty()) {
        return;
    }
    // One body for every subscriber; each line is its head (with its id) and the body.
    // `logs --follow` streams its service's run changes and end too (see follows_event).
    std::optional<std::size_t> service;
    if (follows_event(event.type) && !event.service.empty()) {
        service = std::as_const(m_daemon).supervisor().find(event.service);
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
    const core::Service& s = std::as_const(m_daemon).supervisor().service(service);
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
