#pragma once
// `wait` (SPEC §9): whether a service has reached the condition a client waits for,
// can still reach it, or can no longer reach it without an operator. A pure function
// of the service's state; the shell re-checks pending waits after every pump, so a
// wait is answered by the event that decides it, never by polling.

#include <string>

#include "daemon/core/service.hpp"

namespace pkit::core {

enum class WaitFor { ready, done, stopped };

enum class WaitVerdict {
    pending,      // not yet; the service may still get there
    reached,      // the condition holds now
    unreachable,  // it cannot get there without an operator: answer not_reached
};

struct WaitCheck {
    WaitVerdict verdict = WaitVerdict::pending;
    // For unreachable: "web is failed (restarts_exhausted): exit 1", in plain words.
    std::string reason;
};

// `ready`: running and ready, or done. `done`: done only. `stopped`: stopped, done or
// failed. A `failed` service cannot become ready or done, nor can a `stopped` one
// (the operator stopped it, or it waits for `pkitctl start`).
// A scheduled job (SPEC §12) reaches `done` when an episode that ends after the wait
// began (`episodes_before`: its ScheduleRecord::episodes_ended then) ends done, and
// cannot when that episode fails or the job is disarmed; `ready` once any episode has
// ended done.
WaitCheck check_wait(const Service& service, WaitFor condition, std::uint64_t episodes_before = 0);

std::string_view to_string(WaitFor condition);

}  // namespace pkit::core
