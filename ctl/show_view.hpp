#pragma once
// `pkitctl show NAME`: one screen about one service, like `systemctl status`, built
// from the replies to status (with resources), explain and logs. A pure function of
// those objects and the time, so it is tested without a pkitd.

#include <string>

#include "proto/protocol.hpp"

namespace pkit::ctl {

// What `show` asked pkitd.
struct ShowReplies {
    proto::json status;   // the service's status object (SPEC §5), resources asked
    proto::json explain;  // the explain result: {"text", "facts"}
    proto::json logs;     // the logs result of its last lines
};

// The screen: a title line "NAME: STATE", one "  LABEL: value" line a field, then the
// last lines of output under a "last N lines" heading. `now` is unix seconds.
std::string render_show(const ShowReplies& replies, double now, bool color);

// "running for 3m12s", "backoff for 1.2s, restart 3 in 0.80s" (`restarts` counts the
// pending one), "done (policy_satisfied)
// for 5.0s", "waiting": the state and how long it has lasted.
std::string state_words(const proto::json& status, double now);

// "exited with code 1 after 3.0s at 12:03:04.512", "killed by SIGKILL (liveness) after
// ...", "launch failed: not_found: ...", or "none yet".
std::string last_exit_words(const proto::json& status);

}  // namespace pkit::ctl
