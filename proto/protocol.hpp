#pragma once
// The whole wire protocol in one include, for pkitd's control handler and pkitctl.

#include "proto/codes.hpp"    // IWYU pragma: export
#include "proto/health.hpp"   // IWYU pragma: export
#include "proto/reply.hpp"    // IWYU pragma: export
#include "proto/request.hpp"  // IWYU pragma: export
#include "proto/results.hpp"  // IWYU pragma: export
#include "proto/status.hpp"   // IWYU pragma: export
