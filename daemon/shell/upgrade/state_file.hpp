#pragma once
// The state file of an upgrade in place (SPEC §16): a JSON document that the old pkitd
// writes to a memory file and the new one reads with `--resume FD`. It is written
// straight as text and read into a flat JsonTree: at 1,000 services it is 1.3 MB, and
// a DOM of it costs more than the rest of the upgrade. The core's part is
// walked by persist.hpp; these are its two archives, and the daemon-wide fields beside
// it. The reader is strict: a missing field, a wrong type, a number out of range, a
// name the configuration does not have, or any other version is an error that names
// the field, and nothing it read is used then.
//
//   {"format": "pkit-state", "version": 3, "from": "0.4.0",
//    "saved_at": <monotonic ns>, "daemon": {...}, "core": {...}, "fds": [...],
//    "leftovers": [...], "scaled": [...], "cgroup_runs": [...], "clients": [...]}
//
// Version 3 added the client connections (state_clients.hpp). A pkitd writes the
// newest version the next one reads: to one that reads version 2 at most, the clients
// are not handed over (they end at the exec, as they did then).
//
// Times in "core" are nanoseconds relative to "saved_at": the monotonic clock goes on
// across the exec, so a deadline keeps its moment exactly.

#include <chrono>
#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <vector>

#include "daemon/core/supervisor.hpp"
#include "daemon/shell/control/carried_client.hpp"
#include "proto/json_tree.hpp"

namespace pkit::shell::upgrade {

// A descriptor kept across the exec, by role.
struct KeptFd {
    std::string role;  // control, http, notify, stdout, stderr, records, listen
    int fd = -1;
    std::string service;  // notify, stdout, stderr
    std::uint64_t run = 0;
    std::string pending;  // stdout, stderr: bytes read and not delivered yet
    std::string path;     // notify: the socket's path; listen: its kind and address
};

// A group-mode run's leftover processes, being ended (see runs/leftovers.hpp).
struct LeftoverFact {
    int pgid = 0;
    std::int64_t kill_in_ns = 0;  // SIGKILL due this long after the hand-over
    bool killed = false;
};

// A count of a file's instances that `pkitctl scale` set (SPEC §13), in effect at the
// hand-over: the next pkitd reads the file's own count from disk, and applies this
// before it matches the state's services by name.
struct ScaledFact {
    std::string file;              // the file's name: NAME of NAME@I
    std::uint64_t file_count = 0;  // the file's own `instances` the count was set against
    std::uint64_t count = 0;       // the instances running
};

// With cgroups, what a service's current run read from its cgroup when it started:
// cpu.stat usage_usec and memory.events oom_kill (SPEC §15), so that the next pkitd
// measures the run from its start, not from the hand-over.
struct CgroupRunFact {
    std::string service;
    std::optional<std::uint64_t> usage_usec;
    std::optional<std::uint64_t> oom_kill;
};

struct DaemonFacts {
    int version = 0;            // the state format read
    std::int64_t saved_ns = 0;  // the hand-over's moment on the monotonic clock
    std::string from_version;
    double started_wall = 0.0;
    std::int64_t started_ns = 0;  // pkitd's start, relative to saved_at (negative)
    std::uint64_t orphans_reaped = 0;
    std::vector<KeptFd> fds;
    std::vector<LeftoverFact> leftovers;
    std::vector<ScaledFact> scaled;
    std::vector<CgroupRunFact> cgroup_runs;
    // Version 3: the client connections handed over (see control/carried_client.hpp).
    std::vector<CarriedClient> clients;

    // The hand-over's moment, or `now` when the state names one yet to come (the
    // monotonic clock goes on across the exec: a moment ahead of now is no real one).
    core::TimePoint saved_at(core::TimePoint now) const {
        core::TimePoint saved = core::TimePoint{} + std::chrono::nanoseconds(saved_ns);
        return saved > now || saved_ns < 0 ? now : saved;
    }
};

// The document's text for `supervisor` and `facts`, the moment of the hand-over `now`,
// in state format `version` (k_oldest_written_state_version to core::k_state_version;
// 0: the newest). The version and saved_ns of `facts` are not read: these are the
// writer's own.
std::string write_state(core::Supervisor& supervisor, const DaemonFacts& facts, core::TimePoint now,
                        int version = 0);

// The oldest state format this pkitd can still write, for a next pkitd that reads no
// newer one (a downgrade).
inline constexpr int k_oldest_written_state_version = 2;

// The daemon-wide facts of a document, checked; the core's part stays for apply_state().
std::expected<DaemonFacts, std::string> read_facts(const proto::JsonTree& doc);

// Applies the counts of `scaled` to `tree` (the configuration as read from disk) where
// the file's own count is still the one each was set against; returns those applied.
std::vector<ScaledFact> apply_scaled(const std::vector<ScaledFact>& scaled, config::Tree& tree);

// Fills `supervisor` (built from the same configuration, nothing started) from `doc`,
// with `now` the moment of the resume. On an error the supervisor may be half filled:
// the caller discards it.
std::expected<void, std::string> apply_state(const proto::JsonTree& doc,
                                             core::Supervisor& supervisor, core::TimePoint now);

}  // namespace pkit::shell::upgrade
