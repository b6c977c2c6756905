#pragma once
// Renders what the core knows into the protocol's shapes and pkitd's log: a core Event
// as the `events` stream's proto::Event and as one log line, a Service as the status
// object of SPEC §5. One mapping of a core ExitRecord (exit_info) serves both the
// status's last_exit and the exited event. The core has no JSON; this is where its
// values meet the wire.

#include <csignal>
#include <optional>
#include <string>

#include "daemon/core/service.hpp"
#include "proto/event.hpp"
#include "proto/protocol.hpp"

namespace pkit::shell {

// The event object of SPEC §9: {"type", "service", "group", "at", ...its own fields}.
proto::json event_json(const core::Event& event);

// What the log line of an ended run or supervision says beyond the event itself: the
// state the service is in, its last exit, its stop signal and its restart limit.
struct EndFacts {
    core::State state = core::State::stopped;
    std::optional<core::StopReason> reason;
    std::optional<core::ExitRecord> last_exit;
    int stop_signal = SIGTERM;
    int max_restarts = -1;
    core::Duration within{};
    std::optional<std::uint64_t> memory_max;  // [resources], for an OOM kill's words
};

// The facts of `service` as they are now.
EndFacts end_facts(const core::Service& service);

// One human sentence for pkitd's text log, naming the service: "web: started (pid 42, run 1)",
// "migrate: done (exit 0)", "web: stopped on request (exit 0 after SIGTERM)", "flaky: failed:
// restarts exhausted (5 of 5 in 1m)". Without `facts` (a service pkitd no longer has) the
// end lines fall back to the event's reason.
std::string event_text(const core::Event& event, const EndFacts* facts = nullptr);

// How a run ended, in words, saying what pkitd did when it ended the run: "exit 1",
// "killed by SIGSEGV", "exit 0 after SIGTERM", "ended by SIGTERM", "killed by SIGKILL after
// the stop timeout", each followed by why pkitd stopped it unless an operator asked
// ("(timed out)", "(liveness check failed)", "(not ready in time)").
std::string exit_words(const core::ExitRecord& exit, int stop_signal);
// The same, with an OOM kill (SPEC §15) worded: "killed by the OOM killer (memory_max
// 256MiB)" when it killed the main process, else that clause after the exit's words.
std::string exit_words(const core::ExitRecord& exit, int stop_signal,
                       const std::optional<std::uint64_t>& memory_max);

// The status object of one service (SPEC §5), as of `now`.
proto::ServiceStatus service_status(const core::Service& service, core::Now now);

}  // namespace pkit::shell
