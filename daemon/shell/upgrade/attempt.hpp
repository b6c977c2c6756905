#pragma once
// One upgrade in place under way (SPEC §16), from the request to the exec, and what a
// pkitd that came by one still owes its clients. The Upgrader drives the steps
// (daemon/shell/upgrade/upgrader.cpp):
//
//   check   `BINARY --upgrade-check`: the pkitd it is, the state formats it reads
//   config  the configuration read again: it must be the one running
//   trial   `BINARY --upgrade-check --state 3 --config DIR`: the binary reads the state
//           as it stands then, whole, and builds its services from it, touching no
//           process (format 3 on; an older pkitd has no trial)
//   exec    once the trial has passed (at the next turn, after a reply, for a pkitd
//           with no trial): the busy states checked again, the state written afresh
//           (with the clients), the descriptors left open, execve
//
// Any step that fails answers the request with the reason and changes nothing.

#include <uv.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "daemon/core/types.hpp"
#include "daemon/shell/control/carried_client.hpp"
#include "daemon/shell/control/daemon_port.hpp"
#include "daemon/shell/upgrade/check_child.hpp"
#include "daemon/shell/uv_handle.hpp"

namespace pkit::shell::upgrade {

// The check may take this long before it counts as failed.
inline constexpr std::chrono::milliseconds k_check_limit{5000};
// The trial reads the configuration and the state as a start-up does: 10,000 services
// take about a second on a loaded machine.
inline constexpr std::chrono::milliseconds k_trial_limit{10000};

struct Attempt {
    Attempt(uv_loop_t* loop, std::string binary_path, DaemonPort::UpgradeDone on_done,
            std::function<void()> on_exec_turn)
        : binary(std::move(binary_path)),
          done(std::move(on_done)),
          child(loop),
          exec_turn(loop, std::move(on_exec_turn)) {}

    std::string binary;
    // The request's answer: an error, or (only when the next pkitd reads no format that
    // carries clients) {from, to} before the exec. With clients carried, the next pkitd
    // answers, and this is never called after a successful exec.
    DaemonPort::UpgradeDone done;
    std::string to_version;  // as the check said
    int format = 0;          // the state format written for it
    CheckChild child;
    NextTurn exec_turn;
};

// What a pkitd that came by an upgrade in place does once it serves: take the client
// connections over, and answer the upgrade's own request.
struct Takeover {
    std::vector<CarriedClient> clients;
    core::TimePoint saved{};  // the hand-over's moment, for the waits' deadlines
    std::string from_version;
    // The state could not be resumed: every service was started afresh, and the
    // listening control socket (its descriptor here, -1 when not known) still taken over.
    bool from_scratch = false;
    int control_fd = -1;
};

}  // namespace pkit::shell::upgrade
