#pragma once
// What the control room may ask of the daemon above it, and nothing more. The
// RequestHandler holds a DaemonPort, never the Daemon: a request reads the
// Supervisor, issues commands (core inputs and guarded signals, RunCommands), asks for
// a reload or a shutdown, and asks to be woken at a deadline. The Daemon calls down into the
// handler (after each pump, with each event and output line); the handler never calls back into the
// Daemon's loop machinery, so every request goes one way.

#include <expected>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/supervisor.hpp"
#include "daemon/shell/logfile/log_read.hpp"
#include "proto/results.hpp"
#include "proto/status.hpp"

namespace pkit::shell {

class DaemonPort {
public:
    // The outcome of a reload (SPEC §8): what changed and the load's warnings (each
    // "FILE:LINE:COL: warning: ..."), or every positioned problem, one a line.
    struct ReloadReport {
        core::ReloadOutcome outcome;
        std::vector<std::string> warnings;
    };
    using ReloadResult = std::expected<ReloadReport, std::string>;
    using ReloadDone = std::function<void(const ReloadResult&)>;
    // What a reload would do now (SPEC §21, `reload --dry-run`), or the problems it
    // would refuse the tree for.
    struct PreviewReport {
        core::ReloadPreview preview;
        std::vector<std::string> warnings;
    };
    using PreviewResult = std::expected<PreviewReport, std::string>;
    using PreviewDone = std::function<void(const PreviewResult&)>;

    // The Supervisor as it is; reading never waits for anything (a run still between
    // fork and exec shows as starting, without a pid).
    virtual const core::Supervisor& supervisor() const = 0;
    virtual core::Now now() const = 0;
    // pkitd's own row of `status` (and `ping`'s facts).
    virtual proto::DaemonStatus daemon_status() const = 0;
    // A reading of every run's resources (SPEC §5), by service index as the Supervisor
    // was when its pass began: each service's name, its run's process group (0: none)
    // and what that run used (`used` empty when nothing could be read).
    struct ResourcesReading {
        std::vector<std::string> names;
        std::vector<pid_t> groups;
        std::vector<proto::Resources> used;
    };
    using ResourcesDone = std::function<void(const ResourcesReading&)>;
    // Reads every run's resources off the loop (ResourcesPass, one /proc pass), in a pass
    // that begins after this call; one pass serves every request waiting for it. `done`
    // is called on the loop on a later turn, never after the daemon is gone; only when
    // libuv's pool takes no work is the pass read on the loop, and `done` called within.
    virtual void read_resources(ResourcesDone done) = 0;
    // What became of `service`'s [resources] (SPEC §15), or null when it sets none or
    // they were not applied yet.
    virtual std::optional<proto::ResourceLimitsInfo> resource_limits(std::size_t service) const = 0;
    // SPEC §18: `service`'s log file as status shows it; null without one.
    virtual std::optional<proto::LogFileInfo> log_file(std::size_t) const { return std::nullopt; }
    // Rotates `service`'s log file after the lines queued before; false without one.
    virtual bool rotate_log(std::size_t) { return false; }
    // Reads `service`'s log file and its rotated files back, off the loop (`logs` beyond
    // the tail): `done` gets the lines, oldest first, on the loop on a later turn, never
    // after the daemon is gone; false (and `done` never called) without a file to read.
    using LogReadDone =
        std::function<void(std::expected<std::vector<proto::LogLine>, std::string>)>;
    virtual bool read_log(std::size_t, const ReadBackQuery&, LogReadDone) { return false; }
    // What a client's command may do to runs, inside command(): the core's inputs for a
    // service, and a signal through the daemon's own guard. No mutable Supervisor
    // leaves the daemon.
    class RunCommands {
    public:
        // The Supervisor as the command finds it, every launch in flight resolved.
        virtual const core::Supervisor& supervisor() const = 0;
        virtual void start(std::size_t service) = 0;
        virtual void stop(std::size_t service) = 0;
        virtual void restart(std::size_t service) = 0;
        // `restart --rolling` (SPEC §9): the roll's id, for Supervisor::roll.
        virtual std::size_t restart_rolling(std::vector<std::size_t> services) = 0;
        virtual void pause(std::size_t service) = 0;
        virtual void resume(std::size_t service) = 0;
        // `signo` to `service`'s run (its process group with `group`), nothing when it
        // has no process; through the guard every signal to a run goes through: while a
        // run's exit is held for its cgroup, its reaped pid may be another process's, and
        // the signal goes to what is left in the cgroup instead (cgroup/cgroups.hpp).
        virtual void signal(std::size_t service, int signo, bool group) = 0;

    protected:
        ~RunCommands() = default;
    };
    // A command on runs: every launch in flight is resolved first (the core can stop
    // or signal only a run whose pid it knows), then `act` runs, all at one moment,
    // then the actions it caused are executed (after which the handler's after_pump
    // runs).
    virtual void command(const std::function<void(RunCommands&)>& act) = 0;
    // The daemon's one timer fires at `deadline` (or earlier), and the pump that follows
    // calls the handler's after_pump. A wake-up nobody needs any more costs one pump.
    virtual void wake_at(core::TimePoint deadline) = 0;
    // The daemon's reload; `done` is called on the loop, never after the daemon is gone.
    virtual void reload(ReloadDone done) = 0;
    // The tree read as reload() reads it, compared with what runs, and nothing applied
    // or kept: not the files' parses (the reload cache), not a socket. `done` as for
    // reload().
    virtual void preview_reload(PreviewDone done) = 0;
    virtual void request_shutdown(const std::string& why) = 0;
    // SPEC §13: sets the instances of `name` (a file with instances > 1, checked by the
    // caller) to `count`, starting the missing ones and stopping and removing the
    // highest; the count holds across reloads until the file's own value changes.
    // Returns why it could not (pkitd shutting down), or nullopt once applied.
    virtual std::optional<std::string> scale(const std::string& name, int count) = 0;
    // Upgrade in place (SPEC §16): checks `binary` (empty: the one running) off the
    // loop; `done` gets {from, to} or the reason it cannot be done. After a success
    // the daemon hands over at the next turn, once the reply is written.
    using UpgradeResult = std::expected<std::pair<std::string, std::string>, std::string>;
    using UpgradeDone = std::function<void(const UpgradeResult&)>;
    virtual void upgrade(std::string binary, UpgradeDone done) = 0;
    // pkitd's own log.
    virtual void log(std::string_view level, const std::string& message) = 0;

protected:
    ~DaemonPort() = default;
};

}  // namespace pkit::shell
