#pragma once
// The walk over every owner an upgrade in place hands over and takes back (SPEC §16):
// each owner's part of the state (its descriptors and facts), collected in the order
// the state lists them, and in the next pkitd each kept descriptor given back to its
// owner. The Daemon names its owners here once (HandOverRooms); a new owner with
// something to hand over adds its part to both walks.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/supervisor.hpp"
#include "daemon/shell/cgroup/cgroups.hpp"
#include "daemon/shell/launch/run_records.hpp"
#include "daemon/shell/listen/listen_sockets.hpp"
#include "daemon/shell/reload/reloader.hpp"
#include "daemon/shell/runs/leftovers.hpp"
#include "daemon/shell/runs/run_notify.hpp"
#include "daemon/shell/runs/run_output.hpp"
#include "daemon/shell/upgrade/attempt.hpp"
#include "daemon/shell/upgrade/state_file.hpp"
#include "proto/protocol.hpp"

namespace pkit::shell::upgrade {

struct HandOverRooms {
    core::Supervisor& supervisor;
    RunRecords& records;
    ListenSockets& listen;
    RunNotify& notify;
    RunOutput& output;
    Cgroups& cgroups;
    Leftovers& leftovers;
    Reloader& reloader;
};

// The facts of every owner at `at`, the daemon's listeners (`control_fd`, `http_fd`;
// -1: none) first; `kept` gets each descriptor named.
DaemonFacts collect_facts(const HandOverRooms& rooms, core::TimePoint at, int control_fd,
                          int http_fd, std::vector<int>& kept);

// The next pkitd's side, before the reaper's first batch: each owner takes its facts
// and descriptors back (`endpoint` takes the roles "control" and "http"), the runs'
// records are rewritten, the core resumes at `at`, and a run whose pid is no child of
// this pkitd ends as unseen (logged with `log`). Returns what is owed to the clients
// carried, once pkitd serves.
Takeover resume_owners(const HandOverRooms& rooms, DaemonFacts& facts, core::Now at,
                       const std::string& records_path,
                       const std::function<void(const KeptFd&)>& endpoint,
                       const std::function<void(const std::string&)>& log);

// The reply the upgrade's own request gets from the pkitd it led to.
proto::json takeover_result(const Takeover& takeover, const core::Supervisor& supervisor);

}  // namespace pkit::shell::upgrade
