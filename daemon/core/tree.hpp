#pragma once
// The supervision tree's values (SPEC §6): a group's members, its restart intensity
// and the work in progress when a strategy restarts siblings or a group fails; and
// what a reload changed. The logic is Supervisor's (tree.cpp, reload.cpp).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/model.hpp"
#include "config/spec_diff.hpp"
#include "daemon/core/policy.hpp"

namespace pkit::core {

struct Group {
    config::GroupSpec spec;
    std::vector<std::size_t> members;  // in start order (the spec's member order)
    RestartWindow intensity;           // restart events, counted against max_restarts

    // Stopping siblings one by one in reverse start order, then what follows.
    enum class Then { relaunch, root_restart };
    std::vector<std::size_t> stop_queue;  // next to stop at the front
    bool front_sent = false;              // the front's stop has been sent
    Then then = Then::relaunch;
    bool failed = false;

    bool busy() const { return !stop_queue.empty(); }
};

// A service a reload removes or replaces once its run has ended.
struct PendingReload {
    std::size_t service;
    std::optional<config::ServiceSpec> replacement;  // nullopt: removal
    bool start = false;                              // start it after the replacement
};

// A rolling restart (SPEC §14, `restart --rolling`): its services restarted one at a
// time, each once the one before has a ready new run; a failure ends the roll.
struct Roll {
    std::vector<std::size_t> services;
    std::size_t next = 0;         // services[next - 1] is being restarted
    std::uint64_t noted_run = 0;  // that service's run when its restart was asked
    bool done = false;
    std::optional<std::string> failure;  // why the roll stopped, naming the service
};

// A start_first replacement a reload began (SPEC §14): the service and the run it
// replaces, as Service::replacement() names it until the new run is ready or failed.
struct ReloadReplacement {
    std::size_t service;
    std::uint64_t old_run;
};

// The reply of `reload` (SPEC §9).
struct ReloadOutcome {
    std::vector<std::string> added;
    std::vector<std::string> removed;
    std::vector<std::string> changed;
    int unchanged = 0;
    std::vector<ReloadReplacement> replacements;  // `reload` waits for them (SPEC §21)
};

// What a reload would do to a changed service (SPEC §21, `reload --dry-run`):
enum class ReloadEffect {
    restart,      // its run is stopped, then started with the new definition
    start_first,  // the new run starts beside the old one, which stops once it is ready
    start,        // no run now: started with the new definition
    stop,         // autostart = false: its run is stopped and not started again
    rearm,        // a scheduled job: re-armed (only the schedule differs, or no run now)
    replace,      // no run now, none started: the definition is replaced
};
std::string_view to_string(ReloadEffect effect);

struct ChangedService {
    std::string name;
    ReloadEffect effect = ReloadEffect::restart;
    std::vector<config::KeyChange> keys;  // the service's keys, then its group's
};

// The outcome reload_from() would have, without applying it.
struct ReloadPreview {
    std::vector<std::string> added;
    std::vector<std::string> removed;
    std::vector<ChangedService> changed;
    int unchanged = 0;
};

}  // namespace pkit::core
