#pragma once
// pkitd's own readiness (SPEC §11), for orchestrators: computed from the services'
// states, never stored. pkitd is ready when every supervised service that
// `affects_readiness` is running and ready without an unhealthy liveness status, or
// done; while it shuts down it is never ready. The reason words say what an operator
// would look at first ("backoff: restart 3 in 1.6 s", "failed: restarts_exhausted").

#include <optional>
#include <string>
#include <vector>

#include "daemon/core/supervisor.hpp"

namespace pkit::core {

// One service that keeps pkitd from being ready.
struct NotReady {
    std::string name;
    State state = State::waiting;
    std::string reason;
    bool operator==(const NotReady&) const = default;
};

struct Readiness {
    bool ready = false;
    std::vector<NotReady> not_ready;  // in start order; empty when ready
};

// Why `service` (at `index` in `supervisor`) keeps pkitd from being ready, or nullopt
// when it does not: it is ready, done, stopped by the operator, or excluded by
// `affects_readiness = false`.
std::optional<std::string> not_ready_reason(const Supervisor& supervisor, std::size_t index,
                                            Now now);

// pkitd's readiness over every live service, in start order.
Readiness readiness(const Supervisor& supervisor, Now now);

}  // namespace pkit::core
