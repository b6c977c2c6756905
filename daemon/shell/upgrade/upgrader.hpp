#pragma once
// The owner of an upgrade in place (SPEC §16): the check and the trial of the new
// binary, run as children whose exits it claims, then the hand-over (the state in a
// sealed memory file, the kept descriptors left open, execve). The steps are laid out
// in attempt.hpp. What the state holds comes from the UpgradeHost, which asks each
// owner for its part; the next pkitd's resume is the Daemon's (Daemon::resume).

#include <sys/types.h>
#include <uv.h>

#include <expected>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/supervisor.hpp"
#include "daemon/shell/child_exit.hpp"
#include "daemon/shell/control/daemon_port.hpp"
#include "daemon/shell/io/background_load.hpp"
#include "daemon/shell/io/systemd_notifier.hpp"
#include "daemon/shell/upgrade/attempt.hpp"
#include "daemon/shell/upgrade/state_file.hpp"

namespace pkit::shell::upgrade {

// What the Upgrader asks of the daemon above it.
class UpgradeHost {
public:
    virtual const core::Supervisor& supervisor() const = 0;
    virtual void log(std::string_view level, const std::string& message) = 0;
    // Why pkitd cannot hand over now, if it cannot: launches in flight are resolved
    // first, so that a run being launched is waited for, not a reason.
    virtual std::optional<std::string> busy_for_upgrade() = 0;
    // The state document in `format`, as the hand-over would write it now; `kept` gets
    // every descriptor it names (with the clients' from format 3 on).
    virtual std::string upgrade_state(int format, std::vector<int>& kept) = 0;
    // The configuration on disk read off the loop (the reload's reader).
    virtual std::expected<void, std::string> read_config(BackgroundLoad::Done done) = 0;
    // The counts `scale` set, as the state carries them.
    virtual std::vector<ScaledFact> scaled_facts() const = 0;
    // The stop signals still paced go now: the next pkitd knows nothing of them.
    virtual void flush_signals() = 0;
    // pkitd's own output written out, blocking, before the exec.
    virtual void flush_output() = 0;

protected:
    ~UpgradeHost() = default;
};

// What the exec passes on to the next pkitd.
struct ExecArgs {
    std::string binary;      // the running binary: what `upgrade` without one execs
    std::string config_dir;  // --config
    std::string socket;      // --socket
    std::string log_format;  // --log-format
    SystemdEnvironment systemd;
};

// Clears or sets FD_CLOEXEC on `fd`; false when fcntl fails.
bool set_cloexec(int fd, bool on);

class Upgrader final : public ExitOwner {
public:
    Upgrader(uv_loop_t* loop, UpgradeHost& host, ExecArgs exec);
    Upgrader(const Upgrader&) = delete;
    Upgrader& operator=(const Upgrader&) = delete;

    // DaemonPort::upgrade: checks `binary` (empty: the one running) off the loop; `done`
    // gets {from, to} or the reason. After a success pkitd hands over at the next turn.
    void upgrade(std::string binary, DaemonPort::UpgradeDone done);
    // The check's and the trial's children are claimed.
    bool on_child_exit(ChildExit& exit) override;

private:
    void on_checked(const CheckChild::Outcome& outcome);
    void on_config(const config::LoadResult& tree);
    void on_tried(const CheckChild::Outcome& outcome);
    void hand_over();
    // Ends the upgrade under way: logged, and its request answered with `why`.
    void fail(const std::string& why);

    uv_loop_t* m_loop;
    UpgradeHost& m_host;
    ExecArgs m_exec;
    // The upgrade under way, if any.
    std::unique_ptr<Attempt> m_attempt;
};

}  // namespace pkit::shell::upgrade
