// `pause` and `resume` (SPEC §15): freeze and thaw the cgroups of the named services'
// runs. The request is checked whole before anything is done, so that it acts on all
// of its services or on none: without cgroups it fails with `unsupported` and the
// reason; a named service without a run to freeze fails `pause` with `not_running`.
// Pausing a paused service and resuming one that is not paused change nothing and
// succeed. The reply comes once cgroup.freeze is written: the kernel then freezes
// the processes (cgroup.events `frozen 1`), without pkitd waiting for it.

#include "daemon/shell/control/request_handler.hpp"

namespace pkit::shell {

namespace {

// Why `s` cannot be paused, in words for the error: "web is stopped".
std::string not_pausable(const core::Service& s) {
    std::string text = "\"" + s.name() + "\" is " + std::string(core::to_string(s.state()));
    if (s.draining_pid() != 0) {
        return text + " and a start_first restart is under way (its old run, pid " +
               std::to_string(s.draining_pid()) +
               ", shares its cgroup): it can be paused once that run has ended";
    }
    return text + ": only a starting or running service has a run to pause";
}

}  // namespace

void RequestHandler::handle_pause(ConnectionId connection, const proto::Request& request) {
    auto services = targets(connection, request);
    if (!services) {
        return;
    }
    const bool pause = request.cmd == proto::Command::pause;
    const proto::CgroupsInfo cgroups = m_daemon.daemon_status().cgroups;
    if (!cgroups.enabled) {
        reply_error(connection, request.id, proto::ErrorCode::unsupported,
                    std::string(pause ? "pause" : "resume") +
                        " freezes a service's cgroup, and pkitd uses no cgroups: " +
                        cgroups.reason.value_or("unknown reason"));
        return;
    }
    std::optional<std::string> refused;
    std::vector<std::size_t> acted;
    // A command: every launch in flight is resolved first, so a run that is starting
    // has its pid (and its cgroup) when it is checked.
    m_daemon.command([&](DaemonPort::RunCommands& runs) {
        const core::Supervisor& sup = runs.supervisor();
        if (pause && sup.shutting_down()) {
            refused = "pkitd is shutting down";
            return;
        }
        for (std::size_t i : *services) {
            const core::Service& s = sup.service(i);
            if (!pause) {
                acted.push_back(i);  // resume: nothing to do unless paused
            } else if (s.can_pause()) {
                acted.push_back(i);
            } else if (!request.all) {
                refused = not_pausable(s);
                return;
            }
        }
        for (std::size_t i : acted) {
            if (pause) {
                runs.pause(i);
            } else {
                runs.resume(i);
            }
        }
    });
    if (refused) {
        reply_error(connection, request.id, proto::ErrorCode::not_running, *refused);
        return;
    }
    reply_ok(connection, request.id, services_json(*services));
}

}  // namespace pkit::shell
