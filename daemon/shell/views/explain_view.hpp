#pragma once
// `explain`'s answer (SPEC §9) in the protocol's shape: the core's words about one
// service (core::explain, which words the decisions the gates stored) and its facts.

#include <cstddef>

#include "daemon/core/supervisor.hpp"
#include "proto/results.hpp"

namespace pkit::shell {

// The explanation of service `index` of `supervisor` as it is at `now`.
proto::ExplainResult explain_result(const core::Supervisor& supervisor, std::size_t index,
                                    core::Now now);

}  // namespace pkit::shell
