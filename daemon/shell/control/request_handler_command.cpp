// The requests that act on runs: `start`, `stop`, `restart` (answered once the runs
// have ended, unless no_block) and `signal` (SPEC §9). Each goes to the daemon as one
// DaemonPort::command, through its RunCommands; the replies that wait are answered by
// check_pending(), which the daemon's pump reaches through after_pump(). It answers the `reload`
// requests that wait for their start_first replacements too (request_handler_reload.cpp).

#include "config/values.hpp"
#include "daemon/shell/control/request_handler.hpp"

namespace pkit::shell {

void RequestHandler::handle_control(ConnectionId connection, const proto::Request& request) {
    auto services = targets(connection, request);
    if (!services) {
        return;
    }
    Pending pending{connection, request.id, request.cmd, std::move(*services), {}};
    m_daemon.command([&](DaemonPort::RunCommands& runs) {
        // Every run is noted before anything is acted on, so that each is compared with
        // its run from before the request. Noted one by one, a service acted on earlier
        // in the same request (a name given twice, before names were merged) had its
        // new run noted, launched but not spawned yet: the second restart did nothing to
        // it, and the reply waited for that run to end, for ever.
        for (std::size_t i : pending.services) {
            pending.runs.push_back(runs.supervisor().service(i).run());
        }
        if (request.rolling && request.cmd == proto::Command::restart) {
            pending.roll = runs.restart_rolling(pending.services);
            return;
        }
        for (std::size_t i : pending.services) {
            if (request.cmd == proto::Command::start) {
                runs.start(i);
            } else if (request.cmd == proto::Command::stop) {
                runs.stop(i);
            } else {
                runs.restart(i);
            }
        }
    });
    // no_block: accepted, the commands are issued (the pump sent the signals, or queued
    // them in SignalPace behind a mass stop's); the rows
    // show the services as they are now, not the outcome.
    if (request.no_block || pending_done(pending)) {
        if (auto failed = failed_replacements(pending); failed && !request.no_block) {
            reply_error(connection, request.id, proto::ErrorCode::restart_failed, *failed);
            return;
        }
        reply_ok(connection, request.id, services_json(pending.services));
        return;
    }
    m_pending.push_back(std::move(pending));  // answered by check_pending
}

namespace {

// The start_first replacement `pending` began for service k (SPEC §14), if any: a
// restart of such a service is answered once its new run is ready or has failed.
const core::Replacement* replacement_of(const core::Service& s, proto::Command cmd,
                                        std::uint64_t noted_run) {
    const core::Replacement* replacement = s.replacement();
    const bool replaces = cmd == proto::Command::restart || cmd == proto::Command::reload;
    if (!replaces || replacement == nullptr || replacement->old_run != noted_run) {
        return nullptr;
    }
    return replacement;
}

}  // namespace

std::optional<std::string> RequestHandler::failed_replacements(const Pending& pending) const {
    if (pending.roll) {
        return m_daemon.supervisor().roll(*pending.roll).failure;
    }
    std::optional<std::string> failures;
    for (std::size_t k = 0; k < pending.services.size(); ++k) {
        const core::Service& s = m_daemon.supervisor().service(pending.services[k]);
        const core::Replacement* replacement = replacement_of(s, pending.cmd, pending.runs[k]);
        if (replacement != nullptr && replacement->failure) {
            std::string text = s.name() + ": " + *replacement->failure + "; run " +
                               std::to_string(replacement->old_run) + " keeps running";
            failures = failures ? *failures + "; " + text : text;
        }
    }
    return failures;
}

bool RequestHandler::pending_done(const Pending& pending) const {
    const core::Supervisor& sup = m_daemon.supervisor();
    if (pending.roll) {
        return sup.roll(*pending.roll).done;
    }
    for (std::size_t k = 0; k < pending.services.size(); ++k) {
        const core::Service& s = sup.service(pending.services[k]);
        if (const core::Replacement* r = replacement_of(s, pending.cmd, pending.runs[k])) {
            if (!r->done && !sup.shutting_down()) {
                return false;
            }
            continue;
        }
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

void RequestHandler::check_pending() {
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
        if (p.reload) {
            reply_reload(p);
            continue;
        }
        if (auto failed = failed_replacements(p)) {
            reply_error(p.connection, p.id, proto::ErrorCode::restart_failed, *failed);
            continue;
        }
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
    // A command, so that a launching run gets its signal too; each through the
    // daemon's guard (a run whose exit is held for its cgroup has no pid to signal).
    m_daemon.command([&](DaemonPort::RunCommands& runs) {
        for (std::size_t i : *services) {
            runs.signal(i, *signo, request.group);
        }
    });
    reply_ok(connection, request.id, services_json(*services));
}

// SPEC §13: only a file with instances > 1 scales (its names keep their "@I"); the reply
// is the status of every instance it now has. Instances being removed finish stopping
// after the reply, as a reload's removed services do.
void RequestHandler::handle_scale(ConnectionId connection, const proto::Request& request) {
    const core::Supervisor& sup = m_daemon.supervisor();
    if (sup.find(request.service)) {
        reply_error(connection, request.id, proto::ErrorCode::bad_request,
                    "\"" + request.service +
                        "\" is not a set of instances (its file has no instances > 1); only "
                        "such a set can be scaled");
        return;
    }
    if (sup.find_all(request.service).empty()) {
        reply_error(connection, request.id, proto::ErrorCode::unknown_service,
                    "unknown service \"" + request.service + "\"");
        return;
    }
    if (auto problem = m_daemon.scale(request.service, request.instances)) {
        reply_error(connection, request.id, proto::ErrorCode::bad_request, *problem);
        return;
    }
    reply_ok(connection, request.id,
             services_json(m_daemon.supervisor().find_all(request.service)));
}

}  // namespace pkit::shell
