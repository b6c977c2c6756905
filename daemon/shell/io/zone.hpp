#pragma once
// The time zone cron schedules are read in (SPEC §12): TZ's from pkitd's environment,
// UTC when TZ is unset (not /etc/localtime: a container's image should not decide).

#include "daemon/core/schedule.hpp"

namespace pkit::shell {

// Reads TZ once (tzset: the zone file is read now, at start-up, not on the loop).
core::ZoneOffset zone_from_environment();

}  // namespace pkit::shell
