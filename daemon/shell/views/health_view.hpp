#pragma once
// pkitd's readiness (core/readiness.hpp) in the protocol's shape: the `health` result
// of SPEC §9, which is also the body of the HTTP endpoint's /readyz.

#include <sys/types.h>

#include <vector>

#include "daemon/core/supervisor.hpp"
#include "proto/health.hpp"
#include "proto/status.hpp"

namespace pkit::shell {

proto::HealthResult health_result(const core::Supervisor& supervisor, core::Now now);

// The process group of each service's current run, in `services` order (0 for a
// service without a process), for a resources pass (ResourcesPass, read_run_resources).
std::vector<pid_t> run_groups(const core::Supervisor& supervisor,
                              const std::vector<std::size_t>& services);

}  // namespace pkit::shell
