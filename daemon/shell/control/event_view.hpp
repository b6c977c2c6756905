#pragma once
// Renders what the core knows into the protocol's shapes and pkitd's log: a core Event
// as the `events` stream's proto::Event and as one log line, a Service as the status
// object of SPEC §5. One mapping of a core ExitRecord (exit_info) serves both the
// status's last_exit and the exited event. The core has no JSON; this is where its
// values meet the wire.

#include <string>

#include "daemon/core/service.hpp"
#include "proto/event.hpp"
#include "proto/protocol.hpp"

namespace pkit::shell {

// The event object of SPEC §9: {"type", "service", "group", "at", ...its own fields}.
proto::json event_json(const core::Event& event);

// One human sentence for pkitd's text log, naming the service: "web: started (pid 42, run 1)".
std::string event_text(const core::Event& event);

// The status object of one service (SPEC §5), as of `now`.
proto::ServiceStatus service_status(const core::Service& service, core::Now now);

}  // namespace pkit::shell
